/**
 * The one way a route answers JSON: `reply(Schema, body)` checks the body
 * against its response schema from runtime/protocol/api.ts (the same schema
 * the UI parses with) before it leaves. A body that does not match is a bug
 * in this process: the client gets the fixed `internal_error`, never a shape
 * the UI would have to guess at.
 */
import type { z } from "zod";
import { json } from "./headers.ts";

/** A response body that does not match its declared schema. */
export class ResponseSchemaError extends Error {
  constructor() {
    super("response does not match its schema");
    this.name = "ResponseSchemaError";
  }
}

/**
 * `T` with every key that the schema type `S` does not have mapped to `never`,
 * at every depth (arrays, objects, and the union member `T` matches). So a
 * service that grows a field fails `deno check` here until the field is in
 * runtime/protocol/api.ts — the contract cannot drift silently.
 */
export type Exact<S, T> = unknown extends S ? T
  : T extends readonly (infer E)[]
    ? S extends readonly (infer SE)[] ? readonly Exact<SE, E>[] : never
  : T extends object ? ExactObject<S extends unknown ? (T extends S ? S : never) : never, T>
  : T;
type ExactObject<S, T> = [S] extends [never] ? never
  : { [K in keyof T]: K extends keyof S ? Exact<S[K], T[K]> : never };

/** `json(body, status, headers)` after checking `body` against `schema`. */
export function reply<S extends z.ZodType, T extends z.input<S>>(
  schema: S,
  body: T & Exact<z.input<S>, T>,
  status = 200,
  headers?: Record<string, string>,
): Response {
  if (!schema.safeParse(body).success) throw new ResponseSchemaError();
  return json(body, status, headers);
}
