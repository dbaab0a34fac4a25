/**
 * The trusted ModelCatalog [MB-1, MB-10, MB-11]: the operator's choices at
 * startup (`--ollama URL`, `--model` ≤ 32 in order, `--default-model`,
 * `--max-window`) plus the entries discovery found on that Ollama. A request
 * may only name a catalog `id`; the endpoint, the provider model name, the
 * generation policy per family and phase and the timeouts [MB-5] all come from
 * here and nothing a browser, Agent or Worker sends can change them.
 *
 * What this file enforces: the endpoint is a plain `http://host[:port]` origin
 * (no userinfo, path, query or fragment — the broker speaks HTTP/1.1 itself
 * and never follows redirects or proxies); model names follow the catalog
 * grammar; the Qwen 3.x families get [MB-3]'s profile and every other family
 * only `seed` (plus num_ctx / num_predict); entries and policies are frozen.
 */
import { createHash } from "node:crypto";
import { UsageError } from "../usage_error.ts";
import { isHostQualified, isModelName } from "../protocol/model_name.ts";
import {
  CIRCUIT_OPEN_MS,
  CLI_MODELS_MAX,
  DEFAULT_MODEL,
  DEFAULT_OLLAMA_URL,
  MAX_WINDOW_MIN_TOKENS,
  MODEL_CALL_MS,
  MODEL_DISCOVERY_INTERVAL_MS,
  MODEL_FIRST_FRAME_MS,
  MODEL_IDLE_MS,
  MODEL_KEEP_ALIVE_S,
  MODEL_QUALIFY_TIMEOUT_MS,
  MODEL_QUEUE_WAIT_MS,
  MODEL_REQUALIFY_MIN_INTERVAL_MS,
  MODEL_SHOW_TIMEOUT_MS,
  RUN_WINDOW_MAX_TOKENS,
} from "../limits.ts";

/** Sampling options sent in `options` for one phase; fixed per catalog [MB-3]. */
export interface GenerationPolicy {
  readonly temperature?: number;
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
  /** Each `/api/show` of discovery [MB-10]. @default MODEL_SHOW_TIMEOUT_MS (10 s) */
  readonly showMs: number;
  /** Re-discovery while idle [MB-10]. @default MODEL_DISCOVERY_INTERVAL_MS (5 min) */
  readonly discoveryIntervalMs: number;
}

export const DEFAULT_TIMEOUTS: ModelTimeouts = Object.freeze({
  firstFrameMs: MODEL_FIRST_FRAME_MS,
  idleMs: MODEL_IDLE_MS,
  callMs: MODEL_CALL_MS,
  queueWaitMs: MODEL_QUEUE_WAIT_MS,
  circuitOpenMs: CIRCUIT_OPEN_MS,
  qualifyMs: MODEL_QUALIFY_TIMEOUT_MS,
  requalifyIntervalMs: MODEL_REQUALIFY_MIN_INTERVAL_MS,
  showMs: MODEL_SHOW_TIMEOUT_MS,
  discoveryIntervalMs: MODEL_DISCOVERY_INTERVAL_MS,
});

/** The endpoint as the operator gave it: host (name or literal) and port. */
export interface OllamaEndpoint {
  readonly host: string;
  readonly port: number;
}

/** Which generation profile a model family gets [MB-11]. */
export type ProfileKind = "qwen3" | "generic";

export interface CatalogEntry {
  /** Stable public id a request may pick: the Ollama model name, e.g. `qwen3.5:2b`. */
  readonly id: string;
  /** Provider model name sent to Ollama (trusted; never from a request). */
  readonly providerModel: string;
  readonly endpoint: OllamaEndpoint;
  /** The family reported by `/api/show` (null until discovered). */
  readonly family: string | null;
  /** The generation profile chosen from the family [MB-11]. */
  readonly profileKind: ProfileKind;
  readonly plain: GenerationPolicy;
  readonly tools: GenerationPolicy;
  /** keep_alive sent as a number of seconds [MB-3]. */
  readonly keepAliveS: number;
  readonly timeouts: ModelTimeouts;
  /** Digest of everything above except the id; keys the circuit breaker [MB-5]. */
  readonly profileDigest: string;
}

/** The operator's fixed choices [MB-10]: nothing here comes from a request. */
export interface CatalogConfig {
  readonly endpoint: OllamaEndpoint;
  readonly timeouts: ModelTimeouts;
  /** `serve --model` names in order (the catalog is exactly these), or null: discover all. */
  readonly pinned: readonly string[] | null;
  /** `--default-model`, or null: `qwen3.5:2b` when present, else the first `ready` model. */
  readonly defaultModel: string | null;
  /** `--max-window`: Run window = min(native, maxWindow). */
  readonly maxWindow: number;
}

/**
 * The catalog: the operator's config plus the entries discovery last found.
 * `entries` / `get` / `defaultId` read the current set; only the broker's
 * discovery (model_states.ts) replaces it, through `replaceEntries`.
 */
export interface ModelCatalog {
  readonly config: CatalogConfig;
  readonly entries: readonly CatalogEntry[];
  get(id: string): CatalogEntry | undefined;
  /** The default entry's id [MB-10]. */
  readonly defaultId: string;
  /** Discovery's hand-over: the new entry list and the default id. */
  replaceEntries(entries: readonly CatalogEntry[], defaultId: string): void;
}

export interface CatalogOptions {
  /** @default DEFAULT_OLLAMA_URL */
  ollamaUrl?: string;
  /** `serve --model`, in order (≤ 32). @default null: every model Ollama lists */
  models?: readonly string[] | null;
  /** `--default-model`. */
  defaultModel?: string | null;
  /** `--max-window`. @default RUN_WINDOW_MAX_TOKENS (32768) */
  maxWindow?: number;
  /** Duration overrides (tests). @default DEFAULT_TIMEOUTS */
  timeouts?: Partial<ModelTimeouts>;
}

/**
 * Thrown for an operator-supplied URL or flag the broker will not use. A
 * UsageError, so `serve --ollama <bad>` prints the reason and exits 2.
 */
export class CatalogError extends UsageError {
  override name = "CatalogError";
}

export { isHostQualified, isModelName };

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

/** The endpoint as an origin string (`http://host:port`), as the operator configured it. */
export function endpointUrl(e: OllamaEndpoint): string {
  return `http://${e.host.includes(":") ? `[${e.host}]` : e.host}:${e.port}`;
}

/** The profile a family gets [MB-11]: the Qwen 3.x families (qwen3, qwen3moe, qwen35, …) get [MB-3]'s. */
export function profileKindOf(family: string | null): ProfileKind {
  return family !== null && /^qwen3/i.test(family) ? "qwen3" : "generic";
}

/** Every other family: only num_ctx / num_predict / seed; its Modelfile defaults stand [MB-11]. */
export const GENERIC_PLAIN_POLICY: GenerationPolicy = Object.freeze({ seed: 0 });

/** The frozen entry for one model name of this catalog, with its family's profile. */
export function entryFor(
  config: CatalogConfig,
  name: string,
  family: string | null,
): CatalogEntry {
  const profileKind = profileKindOf(family);
  const profile = {
    providerModel: name,
    endpoint: config.endpoint,
    family,
    profileKind,
    plain: profileKind === "qwen3" ? PLAIN_POLICY : GENERIC_PLAIN_POLICY,
    tools: TOOLS_POLICY,
    keepAliveS: MODEL_KEEP_ALIVE_S,
    timeouts: config.timeouts,
  };
  const profileDigest = createHash("sha256")
    .update("agent-builder/model-profile/v2\0")
    .update(JSON.stringify(profile))
    .digest("hex");
  return Object.freeze({ id: name, ...profile, profileDigest });
}

/** Builds the catalog; its entries are the pinned names (or the default name) until discovery. */
export function createCatalog(opts: CatalogOptions = {}): ModelCatalog {
  const endpoint = parseOllamaUrl(opts.ollamaUrl ?? DEFAULT_OLLAMA_URL);
  const timeouts: ModelTimeouts = Object.freeze({ ...DEFAULT_TIMEOUTS, ...opts.timeouts });
  const pinned = opts.models ?? null;
  if (pinned !== null) {
    if (pinned.length === 0) throw new CatalogError("the catalog needs at least one model");
    if (pinned.length > CLI_MODELS_MAX) {
      throw new CatalogError(`--model may be given at most ${CLI_MODELS_MAX} times`);
    }
    for (const n of pinned) {
      if (!isModelName(n)) throw new CatalogError("invalid model name for --model");
    }
    if (new Set(pinned).size !== pinned.length) throw new CatalogError("duplicate --model");
  }
  const defaultModel = opts.defaultModel ?? null;
  if (defaultModel !== null) {
    if (!isModelName(defaultModel)) {
      throw new CatalogError("invalid model name for --default-model");
    }
    if (pinned !== null && !pinned.includes(defaultModel)) {
      throw new CatalogError("--default-model must be one of the --model names");
    }
  }
  const maxWindow = opts.maxWindow ?? RUN_WINDOW_MAX_TOKENS;
  if (!Number.isSafeInteger(maxWindow) || maxWindow < MAX_WINDOW_MIN_TOKENS) {
    throw new CatalogError(`--max-window must be an integer ≥ ${MAX_WINDOW_MIN_TOKENS}`);
  }
  const config: CatalogConfig = Object.freeze({
    endpoint,
    timeouts,
    pinned: pinned === null ? null : Object.freeze([...pinned]),
    defaultModel,
    maxWindow,
  });
  let entries: readonly CatalogEntry[] = (pinned ?? [defaultModel ?? DEFAULT_MODEL]).map((n) =>
    entryFor(config, n, null)
  );
  let byId = new Map(entries.map((e) => [e.id, e]));
  let defaultId = defaultModel ?? (pinned?.includes(DEFAULT_MODEL) ? DEFAULT_MODEL : entries[0].id);
  return Object.freeze({
    config,
    get entries() {
      return entries;
    },
    get: (id: string) => byId.get(id),
    get defaultId() {
      return defaultId;
    },
    replaceEntries(next: readonly CatalogEntry[], nextDefault: string) {
      entries = Object.freeze([...next]);
      byId = new Map(entries.map((e) => [e.id, e]));
      defaultId = nextDefault;
    },
  });
}
