/**
 * Model qualification [MB-2]: resolve the operator's host once and pin the
 * numeric address, check `/api/version`, then `/api/show` for the model:
 * capabilities must include `completion` (`tools` recorded for tool use) and
 * the native window is read from `model_info["<arch>.context_length"]`.
 * Run window = min(native, 32768); output reserve 4096 (at most half the
 * window); hard input budget = window − reserve. Numbers are always
 * recomputed from what the model reports — names are never trusted.
 *
 * What this file enforces: every failure maps to one fixed UnavailableReason;
 * each request is bounded in time and bytes; no text from the provider leaves
 * this module.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import {
  MODEL_ADDRESS_CANDIDATES_MAX,
  MODEL_WINDOW_MIN_TOKENS,
  OUTPUT_RESERVE_TOKENS,
  RUN_WINDOW_MAX_TOKENS,
} from "../limits.ts";
import type { CatalogEntry, OllamaEndpoint } from "./catalog.ts";
import type { PinnedAddress } from "./http_client.ts";
import { requestJson, TransportError } from "./ollama_client.ts";
import type { QualifiedProfile, UnavailableReason } from "./types.ts";
import { ShowSchema, versionAtLeast, VersionSchema } from "./wire.ts";

/** First Ollama release whose /api/chat honours `truncate` (decision: docs/model-broker.md). */
export const TRUNCATE_MIN_VERSION = "0.12.6";

export type QualifyResult =
  | { ok: true; profile: QualifiedProfile; version: string }
  | { ok: false; reason: UnavailableReason };

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

/** Runs /api/version + /api/show against the pinned address. Never throws for provider faults. */
export async function qualify(
  entry: CatalogEntry,
  addr: PinnedAddress,
  signal: AbortSignal,
): Promise<QualifyResult> {
  const timed = () => AbortSignal.any([signal, AbortSignal.timeout(entry.timeouts.qualifyMs)]);
  let version: string;
  try {
    const v = await requestJson(addr, "GET", "/api/version", undefined, timed(), 4096);
    if (v.status !== 200 || v.text === null) return { ok: false, reason: "unreachable" };
    const parsed = VersionSchema.safeParse(safeJson(v.text));
    if (!parsed.success) return { ok: false, reason: "protocol_error" };
    version = parsed.data.version;

    const s = await requestJson(addr, "POST", "/api/show", { model: entry.providerModel }, timed());
    if (s.status === 404) return { ok: false, reason: "model_missing" };
    if (s.status !== 200 || s.text === null) return { ok: false, reason: "protocol_error" };
    const show = ShowSchema.safeParse(safeJson(s.text));
    if (!show.success) return { ok: false, reason: "protocol_error" };
    const caps = new Set(show.data.capabilities ?? []);
    if (!caps.has("completion")) return { ok: false, reason: "capability_missing" };
    const arch = show.data.model_info["general.architecture"];
    if (typeof arch !== "string" || !/^[a-z0-9_.-]{1,64}$/i.test(arch)) {
      return { ok: false, reason: "protocol_error" };
    }
    const native = show.data.model_info[`${arch}.context_length`];
    if (typeof native !== "number" || !Number.isSafeInteger(native) || native <= 0) {
      return { ok: false, reason: "protocol_error" };
    }
    const window = Math.min(native, RUN_WINDOW_MAX_TOKENS);
    if (window < MODEL_WINDOW_MIN_TOKENS) return { ok: false, reason: "window_too_small" };
    const reserve = Math.min(OUTPUT_RESERVE_TOKENS, Math.floor(window / 2));
    return {
      ok: true,
      version,
      profile: {
        modelId: entry.id,
        nativeWindow: native,
        window,
        reserve,
        budget: window - reserve,
        capabilities: {
          completion: true,
          tools: caps.has("tools"),
          thinking: caps.has("thinking"),
        },
        truncateSupported: versionAtLeast(version, TRUNCATE_MIN_VERSION),
        profileDigest: entry.profileDigest,
      },
    };
  } catch (err) {
    if (err instanceof TransportError) return { ok: false, reason: "unreachable" };
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
