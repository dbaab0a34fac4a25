/**
 * The trusted ModelCatalog [MB-1]: set once by the operator at startup
 * (`--ollama URL`, default model `qwen3.5:2b`). A request may only name a
 * catalog `id`; the endpoint, the provider model name, the generation policy
 * per phase [MB-3] and the timeouts [MB-5] all come from here and nothing a
 * browser, Agent or Worker sends can change them.
 *
 * What this file enforces: the endpoint is a plain `http://host[:port]` origin
 * (no userinfo, path, query or fragment — the broker speaks HTTP/1.1 itself
 * and never follows redirects or proxies); the policies are frozen values.
 */
import { createHash } from "node:crypto";
import { UsageError } from "../usage_error.ts";
import {
  CIRCUIT_OPEN_MS,
  DEFAULT_MODEL,
  DEFAULT_OLLAMA_URL,
  MODEL_CALL_MS,
  MODEL_FIRST_FRAME_MS,
  MODEL_IDLE_MS,
  MODEL_KEEP_ALIVE_S,
  MODEL_QUALIFY_TIMEOUT_MS,
  MODEL_QUEUE_WAIT_MS,
  MODEL_REQUALIFY_MIN_INTERVAL_MS,
} from "../limits.ts";

/** Sampling options sent in `options` for one phase; fixed per catalog [MB-3]. */
export interface GenerationPolicy {
  readonly temperature: number;
  readonly top_p?: number;
  readonly top_k?: number;
  readonly presence_penalty?: number;
  readonly seed: number;
}

/** Plain answers [MB-3]. */
export const PLAIN_POLICY: GenerationPolicy = Object.freeze({
  temperature: 1.0,
  top_p: 0.95,
  top_k: 20,
  presence_penalty: 1.5,
  seed: 0,
});

/** The tool-selection phase [MB-3]. */
export const TOOLS_POLICY: GenerationPolicy = Object.freeze({ temperature: 0, seed: 0 });

/** Durations of one catalog entry [MB-4, MB-5]; injectable so tests run in milliseconds. */
export interface ModelTimeouts {
  /** @default MODEL_FIRST_FRAME_MS (60 s) */
  readonly firstFrameMs: number;
  /** @default MODEL_IDLE_MS (20 s) */
  readonly idleMs: number;
  /** One logical call, from slot acquisition to the final frame. @default MODEL_CALL_MS (120 s) */
  readonly callMs: number;
  /** Semaphore wait before `model_busy`. @default MODEL_QUEUE_WAIT_MS (30 s) */
  readonly queueWaitMs: number;
  /** Circuit open time. @default CIRCUIT_OPEN_MS (30 s) */
  readonly circuitOpenMs: number;
  /** Each qualification request. @default MODEL_QUALIFY_TIMEOUT_MS (5 s) */
  readonly qualifyMs: number;
  /** Spacing of on-demand re-qualification. @default MODEL_REQUALIFY_MIN_INTERVAL_MS (5 s) */
  readonly requalifyIntervalMs: number;
}

export const DEFAULT_TIMEOUTS: ModelTimeouts = Object.freeze({
  firstFrameMs: MODEL_FIRST_FRAME_MS,
  idleMs: MODEL_IDLE_MS,
  callMs: MODEL_CALL_MS,
  queueWaitMs: MODEL_QUEUE_WAIT_MS,
  circuitOpenMs: CIRCUIT_OPEN_MS,
  qualifyMs: MODEL_QUALIFY_TIMEOUT_MS,
  requalifyIntervalMs: MODEL_REQUALIFY_MIN_INTERVAL_MS,
});

/** The endpoint as the operator gave it: host (name or literal) and port. */
export interface OllamaEndpoint {
  readonly host: string;
  readonly port: number;
}

export interface CatalogEntry {
  /** Stable public id a request may pick, e.g. `qwen3.5:2b`. */
  readonly id: string;
  /** Provider model name sent to Ollama (trusted; never from a request). */
  readonly providerModel: string;
  readonly endpoint: OllamaEndpoint;
  readonly plain: GenerationPolicy;
  readonly tools: GenerationPolicy;
  /** keep_alive sent as a number of seconds [MB-3]. */
  readonly keepAliveS: number;
  readonly timeouts: ModelTimeouts;
  /** Digest of everything above except the id; keys the circuit breaker [MB-5]. */
  readonly profileDigest: string;
}

export interface ModelCatalog {
  readonly entries: readonly CatalogEntry[];
  get(id: string): CatalogEntry | undefined;
  readonly defaultId: string;
}

export interface CatalogOptions {
  /** @default DEFAULT_OLLAMA_URL */
  ollamaUrl?: string;
  /** Provider models offered; the first is the default. @default [DEFAULT_MODEL] */
  models?: readonly string[];
  /** Duration overrides (tests). @default DEFAULT_TIMEOUTS */
  timeouts?: Partial<ModelTimeouts>;
}

/**
 * Thrown for an operator-supplied URL the broker will not use. A UsageError,
 * so `serve --ollama <bad>` prints the reason and exits 2.
 */
export class CatalogError extends UsageError {
  override name = "CatalogError";
}

const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

/** Parses `--ollama URL` into an endpoint; throws CatalogError on anything but `http://host[:port][/]`. */
export function parseOllamaUrl(raw: string): OllamaEndpoint {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CatalogError("--ollama must be an absolute http:// URL");
  }
  if (url.protocol !== "http:") throw new CatalogError("--ollama must use http://");
  if (url.username || url.password) throw new CatalogError("--ollama must not carry credentials");
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) {
    throw new CatalogError("--ollama must be an origin without path, query or fragment");
  }
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (!host) throw new CatalogError("--ollama needs a host");
  const port = url.port === "" ? 80 : Number(url.port);
  return Object.freeze({ host, port });
}

/** Builds the frozen catalog. */
export function createCatalog(opts: CatalogOptions = {}): ModelCatalog {
  const endpoint = parseOllamaUrl(opts.ollamaUrl ?? DEFAULT_OLLAMA_URL);
  const timeouts: ModelTimeouts = Object.freeze({ ...DEFAULT_TIMEOUTS, ...opts.timeouts });
  const models = opts.models ?? [DEFAULT_MODEL];
  if (models.length === 0) throw new CatalogError("the catalog needs at least one model");
  const entries = models.map((name): CatalogEntry => {
    if (!MODEL_NAME.test(name)) throw new CatalogError("invalid provider model name");
    const profile = {
      providerModel: name,
      endpoint,
      plain: PLAIN_POLICY,
      tools: TOOLS_POLICY,
      keepAliveS: MODEL_KEEP_ALIVE_S,
      timeouts,
    };
    const profileDigest = createHash("sha256")
      .update("agent-builder/model-profile/v1\0")
      .update(JSON.stringify(profile))
      .digest("hex");
    return Object.freeze({ id: name, ...profile, profileDigest });
  });
  const byId = new Map(entries.map((e) => [e.id, e]));
  if (byId.size !== entries.length) throw new CatalogError("duplicate model in catalog");
  return Object.freeze({
    entries,
    get: (id: string) => byId.get(id),
    defaultId: entries[0].id,
  });
}
