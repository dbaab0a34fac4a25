/**
 * Qualification state of every catalog entry [MB-2]: the pinned address, the
 * current status (qualified profile or a fixed unavailable reason), and
 * single-flight, spaced re-qualification on demand.
 *
 * What this file enforces: the host is resolved once; the first candidate
 * address that answers qualification is pinned for the process lifetime; at
 * most one qualification per entry runs at a time;
 * on-demand re-qualification happens at most once per `requalifyIntervalMs`;
 * qualification never rejects — every failure becomes a fixed reason; public
 * profiles carry no endpoint.
 */
import type { Logger } from "../log.ts";
import type { CatalogEntry, ModelCatalog } from "./catalog.ts";
import type { PinnedAddress } from "./http_client.ts";
import {
  type HostResolver,
  qualify,
  type QualifyResult,
  resolveEndpoint,
  systemResolver,
} from "./qualification.ts";
import type { ModelStatus, PublicModelProfile, UnavailableReason } from "./types.ts";

export interface EntryState {
  status: ModelStatus;
  addr: PinnedAddress | null;
  /** The host's addresses, resolved once; tried in order until one answers. */
  candidates: PinnedAddress[] | null;
  lastQualify: number;
  inflight: Promise<void> | null;
}

export class ModelStates {
  readonly #catalog: ModelCatalog;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #life = new AbortController();
  readonly #states = new Map<string, EntryState>();
  readonly #resolve: HostResolver;

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
    for (const e of catalog.entries) {
      this.#states.set(e.id, {
        status: { available: false, reason: "not_qualified" },
        addr: null,
        candidates: null,
        lastQualify: 0,
        inflight: null,
      });
    }
  }

  /** The state of a catalog entry (exists for every catalog id). */
  get(entry: CatalogEntry): EntryState {
    return this.#states.get(entry.id)!;
  }

  status(modelId: string): ModelStatus {
    return this.#states.get(modelId)?.status ?? { available: false, reason: "not_qualified" };
  }

  /** Marks an entry unavailable after a chat-time fault (re-qualified on demand later). */
  markUnavailable(entry: CatalogEntry, reason: UnavailableReason): void {
    this.get(entry).status = { available: false, reason };
  }

  /** Qualifies now (single-flight). Never rejects. */
  requalify(entry: CatalogEntry): Promise<void> {
    const st = this.get(entry);
    if (st.inflight) return st.inflight;
    st.lastQualify = this.#now();
    st.inflight = (async () => {
      try {
        let r: QualifyResult = { ok: false, reason: "unreachable" };
        if (st.addr !== null) {
          r = await qualify(entry, st.addr, this.#life.signal);
        } else {
          if (st.candidates === null || st.candidates.length === 0) {
            st.candidates = await resolveEndpoint(
              entry.endpoint,
              AbortSignal.any([this.#life.signal, AbortSignal.timeout(entry.timeouts.qualifyMs)]),
              this.#resolve,
            );
          }
          for (const addr of st.candidates) {
            r = await qualify(entry, addr, this.#life.signal);
            if (r.ok || r.reason !== "unreachable") {
              st.addr = addr; // pinned: this address answered
              break;
            }
          }
        }
        st.status = r.ok
          ? { available: true, profile: r.profile }
          : { available: false, reason: r.reason };
        this.#log.info("model.qualified", {
          model: entry.id,
          available: r.ok,
          reason: r.ok ? null : r.reason,
          window: r.ok ? r.profile.window : null,
        });
      } catch (err) {
        // Unexpected (e.g. a permission error): fail closed and say so in the log.
        st.status = { available: false, reason: "unreachable" };
        this.#log.error("model.qualify_failed", {
          model: entry.id,
          error: err instanceof Error ? err.name : "unknown",
        });
      } finally {
        st.inflight = null;
      }
    })();
    return st.inflight;
  }

  /** The current status, re-qualifying first when unavailable and the spacing allows. */
  async ensure(entry: CatalogEntry): Promise<ModelStatus> {
    const st = this.get(entry);
    if (!st.status.available) {
      if (st.inflight) await st.inflight;
      else if (this.#now() - st.lastQualify >= entry.timeouts.requalifyIntervalMs) {
        await this.requalify(entry);
      }
    }
    return st.status;
  }

  /** Starts background re-qualification of unavailable entries (spaced, non-blocking). */
  poke(): void {
    for (const e of this.#catalog.entries) {
      const st = this.get(e);
      if (
        !st.status.available && !st.inflight &&
        this.#now() - st.lastQualify >= e.timeouts.requalifyIntervalMs
      ) {
        void this.requalify(e); // never rejects: failures become a fixed reason
      }
    }
  }

  publicProfiles(): PublicModelProfile[] {
    const dflt = this.#catalog.defaultId;
    return this.#catalog.entries.map((e): PublicModelProfile => {
      const s = this.get(e).status;
      if (!s.available) {
        return {
          id: e.id,
          default: e.id === dflt,
          available: false,
          reason: s.reason,
          window: null,
          budget: null,
          capabilities: [],
        };
      }
      const caps = Object.entries(s.profile.capabilities).filter(([, v]) => v).map(([k]) => k);
      return {
        id: e.id,
        default: e.id === dflt,
        available: true,
        window: s.profile.window,
        budget: s.profile.budget,
        capabilities: caps,
      };
    });
  }

  /** Aborts qualification in flight and waits for it to settle. */
  async close(): Promise<void> {
    this.#life.abort();
    await Promise.allSettled([...this.#states.values()].map((s) => s.inflight));
  }
}
