/**
 * `GET /api/models` (auth `session`) [MB-1, MB-10, §13, §22]: the public catalog
 * profiles — id, default flag, state, availability with a fixed reason,
 * window, input budget, capabilities, family, parameter size, quantization.
 * Never the endpoint host/port, digests or the provider options.
 * `POST /api/models/refresh` (CSRF) re-runs discovery and returns the catalog.
 * Each listing also pokes on-demand re-qualification (spaced by the broker).
 *
 * The model part of `/health` is `modelHealth(broker)`, passed to staticRoutes.
 */
import { z } from "zod";
import type { ModelBroker } from "../model/types.ts";
import { json } from "./headers.ts";
import type { Route } from "./router.ts";
import type { HealthSource } from "./static_routes.ts";

export const PublicModelSchema = z.object({
  id: z.string(),
  default: z.boolean(),
  state: z.enum(["ready", "chat_only", "unsupported", "unavailable"]),
  available: z.boolean(),
  reason: z.string().optional(),
  window: z.number().int().nullable(),
  budget: z.number().int().nullable(),
  capabilities: z.array(z.string()),
  family: z.string().nullable(),
  parameter_size: z.string().nullable(),
  quantization: z.string().nullable(),
}).strict();

export const ModelsResponse = z.object({ models: z.array(PublicModelSchema) }).strict();
export type ModelsResponse = z.infer<typeof ModelsResponse>;

export function modelRoutes(broker: ModelBroker): Route[] {
  return [{
    method: "GET",
    path: "/api/models",
    auth: "session",
    handler: () => {
      broker.poke();
      const body: ModelsResponse = { models: broker.publicProfiles() };
      return json(body);
    },
  }, {
    // [MB-10] discovery now (single-flight; forgets vanished entries), then the catalog.
    method: "POST",
    path: "/api/models/refresh",
    auth: "csrf",
    handler: async () => {
      await broker.refresh();
      const body: ModelsResponse = { models: broker.publicProfiles() };
      return json(body);
    },
  }];
}

/** The model line of `/health`: available, or unavailable with a fixed reason code. */
export function modelHealth(broker: ModelBroker): HealthSource {
  return {
    model() {
      broker.poke(); // lets /health polling pick up an Ollama that started later
      const s = broker.status();
      return s.available ? { available: true } : { available: false, reason: s.reason };
    },
  };
}
