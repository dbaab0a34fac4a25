/**
 * `GET /api/models` (auth `session`) [MB-1, MB-10, §13, §22]: the public catalog
 * profiles — id, default flag, state, availability with a fixed reason,
 * window, input budget, capabilities, family, parameter size, quantization.
 * Never the endpoint host/port, digests or the provider options.
 * `POST /api/models/refresh` (CSRF) re-runs discovery and returns the catalog.
 * Pull and delete [MB-13]: `POST /api/models/pull {name}` → 202 `{pull_id}`,
 * progress as SSE on `GET /api/models/pulls/<id>/events` (`pull.progress`
 * `{status, completed?, total?}` coalesced ≥ 200 ms, then one of
 * `pull.succeeded|failed|cancelled`), `POST …/pulls/<id>/cancel`,
 * `DELETE /api/models/<model_id>` (409 `model_in_use` while a Run uses it).
 * Each listing also pokes on-demand re-qualification (spaced by the broker).
 *
 * The model part of `/health` is `modelHealth(broker)`, passed to staticRoutes.
 */
import { z } from "zod";
import { isModelName } from "../protocol/model_name.ts";
import type { ModelBroker } from "../model/types.ts";
import { AppError } from "../errors.ts";
import { SSE_KEEPALIVE_MS } from "../limits.ts";
import type { PullEvent, PullManager } from "../model/pulls.ts";
import {
  ModelEndpointResponse,
  ModelsResponse,
  PullResponse,
  PullStartedResponse,
} from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";
import type { HealthSource } from "./static_routes.ts";

// The response schemas (PublicModelSchema, ModelsResponse, pulls) live in
// runtime/protocol/api.ts, shared with the UI.

/**
 * A model id a request or an Agent may pick [MB-14]: in the grammar and in the
 * catalog, and not `unsupported` (an `unavailable` entry stays choosable: its
 * Runs fail `model_unavailable`, never a silent substitute).
 */
export function isSelectableModel(broker: ModelBroker, id: string): boolean {
  if (!isModelName(id)) return false;
  const p = broker.publicProfiles().find((m) => m.id === id);
  return p !== undefined && p.state !== "unsupported";
}

export const PullBody = z.object({ name: z.string().max(1024) }).strict();
export type PullBody = z.infer<typeof PullBody>;

export interface ModelRouteDeps {
  pulls: PullManager;
  /** Whether an active Run uses this model (DELETE refuses then) [MB-13]. */
  modelInUse(modelId: string): boolean;
  /** The `--ollama` origin as the operator configured it (for the unreachable banner). */
  endpointUrl: string;
}

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  "x-accel-buffering": "no",
};

/** A pull's progress as SSE: the latest state at once, then updates; closes after the end. */
function pullStream(pulls: PullManager, id: string, signal: AbortSignal): Response {
  const enc = new TextEncoder();
  let unsubscribe = () => {};
  let keepalive: ReturnType<typeof setInterval> | undefined;
  // Subscribing first makes an unknown id a plain 404, not a broken stream.
  let ctl: ReadableStreamDefaultController<Uint8Array> | null = null;
  const early: PullEvent[] = [];
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    unsubscribe();
    try {
      ctl?.close();
    } catch (err) {
      if (!(err instanceof TypeError)) throw err; // already closed
    }
  };
  const send = (e: PullEvent) => {
    if (ctl === null) return void early.push(e);
    if (closed) return;
    ctl.enqueue(enc.encode(`event: ${e.kind}\ndata: ${JSON.stringify(e)}\n\n`));
    if (e.kind !== "pull.progress") close();
  };
  unsubscribe = pulls.subscribe(id, send);
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
      keepalive = setInterval(() => c.enqueue(enc.encode(": keep-alive\n\n")), SSE_KEEPALIVE_MS);
      signal.addEventListener("abort", close, { once: true });
      for (const e of early.splice(0)) send(e);
    },
    cancel() {
      closed = true;
      clearInterval(keepalive);
      unsubscribe();
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

export function modelRoutes(broker: ModelBroker, deps?: ModelRouteDeps): ProductRoute[] {
  const catalog = () => reply(ModelsResponse, { models: broker.publicProfiles() });
  const routes: ProductRoute[] = [{
    method: "GET",
    path: "/api/models",
    auth: "session",
    response: ModelsResponse,
    handler: () => {
      broker.poke();
      return catalog();
    },
  }, {
    // [MB-10] discovery now (single-flight; forgets vanished entries), then the catalog.
    method: "POST",
    path: "/api/models/refresh",
    auth: "csrf",
    response: ModelsResponse,
    handler: async () => {
      await broker.refresh();
      return catalog();
    },
  }];
  if (!deps) return routes;
  const { pulls } = deps;
  routes.push({
    // The operator's own `--ollama` origin, for the banner that says how to reach it
    // (session only; never part of a model profile; never the resolved address).
    method: "GET",
    path: "/api/models/endpoint",
    auth: "session",
    response: ModelEndpointResponse,
    handler: () => reply(ModelEndpointResponse, { url: deps.endpointUrl }),
  }, {
    // [MB-13] one pull at a time; a bare catalog name only.
    method: "POST",
    path: "/api/models/pull",
    auth: "csrf",
    body: PullBody,
    response: PullStartedResponse,
    handler: (ctx: RouteContext<PullBody>) =>
      reply(PullStartedResponse, pulls.start(ctx.body.name), 202),
  }, {
    method: "GET",
    path: "/api/models/pulls/:pull",
    auth: "session",
    response: PullResponse,
    handler: (ctx) => {
      const v = pulls.view(ctx.params.pull);
      if (v === null) throw new AppError("pull_not_found");
      return reply(PullResponse, { pull: v });
    },
  }, {
    method: "GET",
    path: "/api/models/pulls/:pull/events",
    auth: "session",
    // An event stream: each frame's data is a PullEventSchema (runtime/protocol/api.ts).
    response: null,
    handler: (ctx) => pullStream(pulls, ctx.params.pull, ctx.signal),
  }, {
    method: "POST",
    path: "/api/models/pulls/:pull/cancel",
    auth: "csrf",
    response: PullResponse,
    handler: (ctx) => reply(PullResponse, { pull: pulls.cancel(ctx.params.pull) }),
  }, {
    // [MB-13] delete on Ollama; 409 while a Run uses the model; the catalog after.
    method: "DELETE",
    path: "/api/models/:model",
    auth: "csrf",
    response: ModelsResponse,
    handler: async (ctx) => {
      const id = ctx.params.model;
      if (!isModelName(id) || !broker.publicProfiles().some((m) => m.id === id)) {
        throw new AppError("model_unknown");
      }
      if (deps.modelInUse(id)) throw new AppError("model_in_use");
      await pulls.remove(id, ctx.signal);
      return catalog();
    },
  });
  return routes;
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
