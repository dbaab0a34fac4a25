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

/** Resolves the endpoint host once to one numeric address (IP literals are used as-is). */
export async function pinAddress(
  endpoint: OllamaEndpoint,
  signal: AbortSignal,
): Promise<PinnedAddress | null> {
  const hostHeader = `${
    endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host
  }:${endpoint.port}`;
  if (isIP(endpoint.host)) return { ip: endpoint.host, port: endpoint.port, hostHeader };
  let onAbort = () => {};
  try {
    const found = await Promise.race([
      lookup(endpoint.host, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    const first = found[0];
    if (!first) return null;
    return { ip: first.address, port: endpoint.port, hostHeader };
  } catch (err) {
    if (signal.aborted) return null;
    if (err instanceof Error && "code" in err) return null; // ENOTFOUND, EAI_AGAIN, …
    throw err;
  } finally {
    signal.removeEventListener("abort", onAbort);
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
