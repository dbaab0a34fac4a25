/**
 * Model discovery and qualification [MB-2, MB-10]: resolve the operator's host
 * once and pin the numeric address, check `/api/version`, list `/api/tags`
 * (≤ MODEL_TAGS_MAX models, body ≤ MODEL_TAGS_BODY_MAX_BYTES), and qualify one
 * model with `/api/show` (≤ MODEL_SHOW_TIMEOUT_MS, body ≤
 * MODEL_SHOW_BODY_MAX_BYTES): capabilities, family, parameter size,
 * quantization and `model_info["<arch>.context_length"]`.
 * Run window = min(native, --max-window); output reserve = min(4096, window/4);
 * input budget = window − reserve. Numbers are always recomputed from what the
 * model reports — names are never trusted.
 *
 * What this file enforces: every failure maps to one fixed UnavailableReason
 * (or the `unsupported` state for a model without `completion`); each request
 * is bounded in time and bytes; no text from the provider leaves this module
 * except the short, grammar-checked family / size / quantization labels.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import {
  MODEL_ADDRESS_CANDIDATES_MAX,
  MODEL_SHOW_BODY_MAX_BYTES,
  MODEL_TAGS_BODY_MAX_BYTES,
  MODEL_TAGS_MAX,
  MODEL_WINDOW_MIN_TOKENS,
  OUTPUT_RESERVE_TOKENS,
} from "../limits.ts";
import { type CatalogConfig, entryFor, isModelName, type OllamaEndpoint } from "./catalog.ts";
import type { CatalogEntry } from "./catalog.ts";
import type { PinnedAddress } from "./http_client.ts";
import { requestJson, TransportError } from "./ollama_client.ts";
import type { QualifiedProfile, UnavailableReason } from "./types.ts";
import { ShowSchema, TagsSchema, versionAtLeast, VersionSchema } from "./wire.ts";

/** First Ollama release whose /api/chat honours `truncate` (decision: docs/model-broker.md). */
export const TRUNCATE_MIN_VERSION = "0.12.6";

/** What `/api/show` made of one model. */
export type ShowResult =
  | { kind: "ok"; entry: CatalogEntry; profile: QualifiedProfile }
  | { kind: "unsupported"; entry: CatalogEntry; details: ModelDetails }
  | { kind: "unavailable"; reason: UnavailableReason };

export interface ModelDetails {
  family: string | null;
  parameterSize: string | null;
  quantization: string | null;
}

/** Resolves a host name to numeric addresses, in the resolver's order. */
export type HostResolver = (host: string, signal: AbortSignal) => Promise<string[]>;

/** The system resolver (`node:dns` lookup: honours /etc/hosts), all addresses, verbatim order. */
export const systemResolver: HostResolver = async (host, signal) => {
  let onAbort = () => {};
  try {
    const found = await Promise.race([
      lookup(host, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    return found.map((a) => a.address);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
};

/**
 * Resolves the endpoint host once to its candidate numeric addresses (an IP
 * literal is used as-is). The caller pins the first candidate that answers:
 * `localhost` often resolves to `::1` first while Ollama listens on
 * 127.0.0.1 only. Returns [] when the name does not resolve.
 */
export async function resolveEndpoint(
  endpoint: OllamaEndpoint,
  signal: AbortSignal,
  resolve: HostResolver = systemResolver,
): Promise<PinnedAddress[]> {
  const hostHeader = `${
    endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host
  }:${endpoint.port}`;
  if (isIP(endpoint.host)) return [{ ip: endpoint.host, port: endpoint.port, hostHeader }];
  try {
    const ips = await resolve(endpoint.host, signal);
    return ips.filter((ip) => isIP(ip) !== 0).slice(0, MODEL_ADDRESS_CANDIDATES_MAX).map((ip) => ({
      ip,
      port: endpoint.port,
      hostHeader,
    }));
  } catch (err) {
    if (signal.aborted) return [];
    if (err instanceof Error && "code" in err) return []; // ENOTFOUND, EAI_AGAIN, …
    throw err;
  }
}

/** `GET /api/version`: the server's version, or `unreachable` / `protocol_error`. */
export async function probeVersion(
  addr: PinnedAddress,
  signal: AbortSignal,
): Promise<{ ok: true; version: string } | { ok: false; reason: UnavailableReason }> {
  try {
    const v = await requestJson(addr, "GET", "/api/version", undefined, signal, 4096);
    if (v.status !== 200 || v.text === null) return { ok: false, reason: "unreachable" };
    const parsed = VersionSchema.safeParse(safeJson(v.text));
    if (!parsed.success) return { ok: false, reason: "protocol_error" };
    return { ok: true, version: parsed.data.version };
  } catch (err) {
    if (err instanceof TransportError) return { ok: false, reason: "unreachable" };
    throw err;
  }
}

/**
 * `GET /api/tags`: the model names Ollama holds, in its order, at most
 * MODEL_TAGS_MAX; names outside the catalog grammar are skipped (counted).
 */
export async function listTags(
  addr: PinnedAddress,
  signal: AbortSignal,
): Promise<
  { ok: true; names: string[]; skipped: number } | { ok: false; reason: UnavailableReason }
> {
  try {
    const t = await requestJson(
      addr,
      "GET",
      "/api/tags",
      undefined,
      signal,
      MODEL_TAGS_BODY_MAX_BYTES,
    );
    if (t.status !== 200) return { ok: false, reason: "protocol_error" };
    if (t.text === null) {
      return { ok: false, reason: t.tooLarge ? "tags_too_large" : "protocol_error" };
    }
    const parsed = TagsSchema.safeParse(safeJson(t.text));
    if (!parsed.success) return { ok: false, reason: "protocol_error" };
    const names: string[] = [];
    let skipped = 0;
    for (const m of parsed.data.models.slice(0, MODEL_TAGS_MAX)) {
      const name = m.name ?? m.model;
      if (isModelName(name) && !names.includes(name)) names.push(name);
      else skipped++;
    }
    skipped += Math.max(0, parsed.data.models.length - MODEL_TAGS_MAX);
    return { ok: true, names, skipped };
  } catch (err) {
    if (err instanceof TransportError) {
      return { ok: false, reason: signal.aborted ? "show_timeout" : "unreachable" };
    }
    throw err;
  }
}

const LABEL = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,31}$/;
const label = (v: unknown): string | null => typeof v === "string" && LABEL.test(v) ? v : null;

/** `/api/show` for one model: its state, entry and profile. Never throws for provider faults. */
export async function showModel(
  config: CatalogConfig,
  name: string,
  addr: PinnedAddress,
  version: string,
  signal: AbortSignal,
): Promise<ShowResult> {
  try {
    const s = await requestJson(
      addr,
      "POST",
      "/api/show",
      { model: name },
      signal,
      MODEL_SHOW_BODY_MAX_BYTES,
    );
    if (s.status === 404) return { kind: "unavailable", reason: "model_missing" };
    if (s.status !== 200) return { kind: "unavailable", reason: "protocol_error" };
    if (s.text === null) {
      return { kind: "unavailable", reason: s.tooLarge ? "show_too_large" : "protocol_error" };
    }
    const show = ShowSchema.safeParse(safeJson(s.text));
    if (!show.success) return { kind: "unavailable", reason: "protocol_error" };
    const arch = show.data.model_info["general.architecture"];
    const details: ModelDetails = {
      family: label(show.data.details?.family) ?? label(arch),
      parameterSize: label(show.data.details?.parameter_size),
      quantization: label(show.data.details?.quantization_level),
    };
    const entry = entryFor(config, name, details.family);
    const caps = new Set(show.data.capabilities ?? []);
    if (!caps.has("completion")) return { kind: "unsupported", entry, details };
    if (typeof arch !== "string" || !/^[a-z0-9_.-]{1,64}$/i.test(arch)) {
      return { kind: "unavailable", reason: "protocol_error" };
    }
    const native = show.data.model_info[`${arch}.context_length`];
    if (typeof native !== "number" || !Number.isSafeInteger(native) || native <= 0) {
      return { kind: "unavailable", reason: "protocol_error" };
    }
    const window = Math.min(native, config.maxWindow);
    if (window < MODEL_WINDOW_MIN_TOKENS) {
      return { kind: "unavailable", reason: "window_too_small" };
    }
    const reserve = Math.min(OUTPUT_RESERVE_TOKENS, Math.floor(window / 4));
    const tools = caps.has("tools");
    return {
      kind: "ok",
      entry,
      profile: {
        modelId: name,
        nativeWindow: native,
        window,
        reserve,
        budget: window - reserve,
        capabilities: { completion: true, tools, thinking: caps.has("thinking") },
        state: tools ? "ready" : "chat_only",
        ...details,
        truncateSupported: versionAtLeast(version, TRUNCATE_MIN_VERSION),
        profileDigest: entry.profileDigest,
      },
    };
  } catch (err) {
    if (err instanceof TransportError) {
      return { kind: "unavailable", reason: signal.aborted ? "show_timeout" : "unreachable" };
    }
    throw err;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // invalid JSON fails the schema check that follows
  }
}
