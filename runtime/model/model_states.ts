/**
 * Catalog discovery and the state of every entry [MB-2, MB-10]: the pinned
 * address, the four states (`ready`, `chat_only`, `unsupported`,
 * `unavailable` with a fixed reason), single-flight discovery, and spaced
 * on-demand re-discovery.
 *
 * What this file enforces: the host is resolved once; the first candidate
 * address that answers is pinned for the process lifetime; at most one
 * discovery runs at a time and at most MODEL_SHOW_CONCURRENCY `/api/show`
 * requests at once; on-demand re-discovery happens at most once per
 * `requalifyIntervalMs`; discovery never rejects — every failure becomes a
 * fixed reason — and never touches a call in flight (the catalog is replaced
 * as a whole; a running call keeps the entry and profile it started with);
 * an entry that vanished stays listed as `unavailable` (`model_missing`)
 * until an explicit refresh, so the operator sees it was marked [MB-14];
 * `unsupported` models are hidden unless named by `--model`; public profiles
 * carry no host, port or digest.
 */
import { DEFAULT_MODEL, MODEL_SHOW_CONCURRENCY } from "../limits.ts";
import type { Logger } from "../log.ts";
import { type CatalogEntry, entryFor, type ModelCatalog } from "./catalog.ts";
import type { PinnedAddress } from "./http_client.ts";
import {
  type HostResolver,
  listTags,
  type ModelDetails,
  probeVersion,
  resolveEndpoint,
  showModel,
  type ShowResult,
  systemResolver,
} from "./qualification.ts";
import type { CatalogState, ModelStatus, PublicModelProfile, UnavailableReason } from "./types.ts";
import { errorName } from "../log.ts";

export interface EntryState {
  state: CatalogState;
  status: ModelStatus;
  details: ModelDetails;
}

const NO_DETAILS: ModelDetails = Object.freeze({
  family: null,
  parameterSize: null,
  quantization: null,
});

function unavailable(reason: UnavailableReason, details = NO_DETAILS): EntryState {
  return { state: "unavailable", status: { available: false, reason }, details };
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>) {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export class ModelStates {
  readonly #catalog: ModelCatalog;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #life = new AbortController();
  readonly #states = new Map<string, EntryState>();
  readonly #resolve: HostResolver;
  #addr: PinnedAddress | null = null;
  #candidates: PinnedAddress[] | null = null;
  #inflight: Promise<void> | null = null;
  #lastDiscovery = 0;
  /** Ids discovery has listed at least once (only those are kept marked when they vanish). */
  readonly #seen = new Set<string>();

  constructor(
    catalog: ModelCatalog,
    log: Logger,
    now: () => number,
    resolve: HostResolver = systemResolver,
  ) {
    this.#catalog = catalog;
    this.#log = log;
    this.#now = now;
    this.#resolve = resolve;
    for (const e of catalog.entries) this.#states.set(e.id, unavailable("not_qualified"));
  }

  /** The pinned address (null until an address answered). */
  get addr(): PinnedAddress | null {
    return this.#addr;
  }

  /** The state of a catalog entry. */
  get(entry: CatalogEntry): EntryState {
    return this.#states.get(entry.id) ?? unavailable("not_qualified");
  }

  status(modelId: string): ModelStatus {
    return this.#states.get(modelId)?.status ?? { available: false, reason: "not_qualified" };
  }

  /** Marks an entry unavailable after a chat-time fault (re-discovered on demand later). */
  markUnavailable(entry: CatalogEntry, reason: UnavailableReason): void {
    const st = this.#states.get(entry.id);
    this.#states.set(entry.id, unavailable(reason, st?.details));
  }

  /** Runs discovery now (single-flight). `forget` drops vanished entries. Never rejects. */
  discover(forget = false): Promise<void> {
    if (this.#inflight) return this.#inflight;
    this.#lastDiscovery = this.#now();
    this.#inflight = (async () => {
      try {
        await this.#discover(forget);
      } catch (err) {
        // Unexpected (e.g. a permission error): fail closed and say so in the log.
        this.#markAll("unreachable");
        this.#log.error("model.discovery_failed", {
          error: errorName(err),
        });
      } finally {
        this.#inflight = null;
      }
    })();
    return this.#inflight;
  }

  async #discover(forget: boolean): Promise<void> {
    const t = this.#catalog.config.timeouts;
    const timed = (ms: number) => AbortSignal.any([this.#life.signal, AbortSignal.timeout(ms)]);
    let version: Awaited<ReturnType<typeof probeVersion>> = { ok: false, reason: "unreachable" };
    if (this.#addr !== null) {
      version = await probeVersion(this.#addr, timed(t.qualifyMs));
    } else {
      if (this.#candidates === null || this.#candidates.length === 0) {
        this.#candidates = await resolveEndpoint(
          this.#catalog.config.endpoint,
          timed(t.qualifyMs),
          this.#resolve,
        );
      }
      for (const addr of this.#candidates) {
        version = await probeVersion(addr, timed(t.qualifyMs));
        if (version.ok || version.reason !== "unreachable") {
          this.#addr = addr; // pinned: this address answered
          break;
        }
      }
    }
    if (!version.ok || this.#addr === null) {
      this.#markAll(version.ok ? "unreachable" : version.reason);
      return;
    }
    const addr = this.#addr;
    const tags = await listTags(addr, timed(t.qualifyMs));
    if (!tags.ok) {
      this.#markAll(tags.reason);
      return;
    }
    const pinned = this.#catalog.config.pinned;
    const present = new Set(tags.names);
    const names = pinned ?? [...tags.names].sort();
    const results = await mapLimit(
      names,
      MODEL_SHOW_CONCURRENCY,
      (name): Promise<ShowResult> =>
        present.has(name)
          ? showModel(this.#catalog.config, name, addr, version.version, timed(t.showMs))
          : Promise.resolve({ kind: "unavailable", reason: "model_missing" }),
    );
    const entries: CatalogEntry[] = [];
    const states = new Map<string, EntryState>();
    names.forEach((name, i) => {
      const r = results[i];
      const old = this.#catalog.get(name);
      switch (r.kind) {
        case "ok":
          entries.push(r.entry);
          states.set(name, {
            state: r.profile.state,
            status: { available: true, profile: r.profile },
            details: {
              family: r.profile.family,
              parameterSize: r.profile.parameterSize,
              quantization: r.profile.quantization,
            },
          });
          break;
        case "unsupported":
          if (pinned === null) break; // hidden unless named by --model
          entries.push(r.entry);
          states.set(name, {
            state: "unsupported",
            status: { available: false, reason: "capability_missing" },
            details: r.details,
          });
          break;
        case "unavailable":
          entries.push(old ?? entryFor(this.#catalog.config, name, null));
          states.set(name, unavailable(r.reason, this.#states.get(name)?.details));
      }
    });
    if (pinned === null && !forget) {
      // A model that vanished stays marked until an explicit refresh [MB-14].
      for (const e of this.#catalog.entries) {
        const st = this.#states.get(e.id);
        if (present.has(e.id) || st === undefined || !this.#seen.has(e.id)) continue;
        entries.push(e);
        states.set(e.id, unavailable("model_missing", st.details));
      }
    }
    for (const n of tags.names) this.#seen.add(n);
    if (forget) { for (const id of [...this.#seen]) if (!present.has(id)) this.#seen.delete(id); }
    const dflt = this.#defaultOf(entries, states);
    if (entries.length === 0) {
      // Nothing usable: the default name stays listed so the operator sees why (and can pull it).
      const i = names.indexOf(dflt);
      entries.push(this.#catalog.get(dflt) ?? entryFor(this.#catalog.config, dflt, null));
      states.set(
        dflt,
        unavailable(
          i >= 0 && results[i].kind === "unsupported" ? "capability_missing" : "model_missing",
        ),
      );
    }
    this.#states.clear();
    for (const [k, v] of states) this.#states.set(k, v);
    this.#catalog.replaceEntries(entries, dflt);
    this.#log.info("model.discovered", {
      listed: tags.names.length,
      skipped: tags.skipped,
      catalog: entries.length,
      ready: [...states.values()].filter((s) => s.state === "ready").length,
      chat_only: [...states.values()].filter((s) => s.state === "chat_only").length,
    });
  }

  /** [MB-10]: --default-model, else qwen3.5:2b when usable, else the first ready model. */
  #defaultOf(entries: CatalogEntry[], states: Map<string, EntryState>): string {
    const cfg = this.#catalog.config;
    if (cfg.defaultModel !== null) return cfg.defaultModel;
    const usable = (id: string) => {
      const s = states.get(id)?.state;
      return s === "ready" || s === "chat_only";
    };
    if (entries.some((e) => e.id === DEFAULT_MODEL) && usable(DEFAULT_MODEL)) return DEFAULT_MODEL;
    return entries.find((e) => states.get(e.id)?.state === "ready")?.id ??
      entries.find((e) => usable(e.id))?.id ??
      entries[0]?.id ?? DEFAULT_MODEL;
  }

  #markAll(reason: UnavailableReason): void {
    for (const e of this.#catalog.entries) {
      this.#states.set(e.id, unavailable(reason, this.#states.get(e.id)?.details));
    }
    this.#log.info("model.discovered", { available: false, reason });
  }

  #due(): boolean {
    return this.#now() - this.#lastDiscovery >= this.#catalog.config.timeouts.requalifyIntervalMs;
  }

  /** The current status, re-discovering first when unavailable and the spacing allows. */
  async ensure(entry: CatalogEntry): Promise<ModelStatus> {
    if (!this.get(entry).status.available) {
      if (this.#inflight) await this.#inflight;
      else if (this.#due()) await this.discover();
    }
    return this.status(entry.id);
  }

  /** Starts background re-discovery when the default entry is unavailable (spaced, non-blocking). */
  poke(): void {
    const d = this.#catalog.get(this.#catalog.defaultId);
    const down = d === undefined || !this.get(d).status.available;
    if (down && !this.#inflight && this.#due()) void this.discover();
  }

  publicProfiles(): PublicModelProfile[] {
    const dflt = this.#catalog.defaultId;
    return this.#catalog.entries.map((e): PublicModelProfile => {
      const st = this.get(e);
      const base = {
        id: e.id,
        default: e.id === dflt,
        state: st.state,
        family: st.details.family,
        parameter_size: st.details.parameterSize,
        quantization: st.details.quantization,
      };
      const s = st.status;
      if (!s.available) {
        return {
          ...base,
          available: false,
          reason: s.reason,
          window: null,
          budget: null,
          capabilities: [],
        };
      }
      const caps = Object.entries(s.profile.capabilities).filter(([, v]) => v).map(([k]) => k);
      return {
        ...base,
        available: true,
        window: s.profile.window,
        budget: s.profile.budget,
        capabilities: caps,
      };
    });
  }

  /** Aborts discovery in flight and waits for it to settle. */
  async close(): Promise<void> {
    this.#life.abort();
    await this.#inflight;
  }
}
