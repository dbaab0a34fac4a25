/**
 * Model pulls and deletes on the operator's Ollama [MB-13]: one pull at a
 * time, its progress published to subscribers (the SSE route) coalesced at
 * least PULL_PROGRESS_COALESCE_MS apart, cancel, and discovery again on
 * success.
 *
 * What this file enforces: only a bare catalog name is pulled (the grammar,
 * and no registry host: a first path part with a `.` or a `:port` ⇒
 * `model_name_invalid`); a second pull while one runs ⇒ `pull_busy`; the
 * progress stream is bounded (PULL_STREAM_MAX_BYTES / _LINES, lines ≤
 * PULL_LINE_MAX_BYTES, PULL_IDLE_MS between lines); an Ollama error line ends
 * the pull `failed` with its message only when it is ≤ 256 printable ASCII
 * bytes, else a fixed text; a cancel closes the HTTP connection at once; at
 * most PULLS_REMEMBERED_MAX finished pulls and PULL_SSE_SUBSCRIBERS_MAX
 * subscribers per pull are kept. Nothing of the endpoint leaves this module.
 */
import { AppError } from "../errors.ts";
import {
  PULL_ERROR_MESSAGE_MAX_BYTES,
  PULL_IDLE_MS,
  PULL_LINE_MAX_BYTES,
  PULL_PROGRESS_COALESCE_MS,
  PULL_SSE_SUBSCRIBERS_MAX,
  PULL_STREAM_MAX_BYTES,
  PULL_STREAM_MAX_LINES,
  PULLS_REMEMBERED_MAX,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import { isHostQualified, isModelName } from "../protocol/model_name.ts";
import { httpRequest, type PinnedAddress, TransportError } from "./http_client.ts";
import { NdjsonReader, readErrorBody, requestJson, StreamBoundError } from "./ollama_client.ts";
import { PullLineSchema } from "./wire.ts";
import { errorName } from "../log.ts";

/** The fixed text of a failed pull whose provider message is not shown. */
export const PULL_FAILED_TEXT = "The pull failed.";
const STALLED_TEXT = "The pull stalled: Ollama sent no progress.";
const UNREACHABLE_TEXT = "Ollama is unreachable.";

export type PullEvent =
  | { kind: "pull.progress"; status: string; completed?: number; total?: number }
  | { kind: "pull.succeeded"; name: string }
  | { kind: "pull.failed"; message: string }
  | { kind: "pull.cancelled" };

export interface PullView {
  pull_id: string;
  name: string;
  state: "running" | "succeeded" | "failed" | "cancelled";
  last: PullEvent | null;
}

interface Pull {
  id: string;
  name: string;
  state: PullView["state"];
  ac: AbortController;
  /** Latest progress sent to subscribers, and the one waiting for the coalescing timer. */
  sent: PullEvent | null;
  pending: PullEvent | null;
  lastSentAt: number;
  timer: ReturnType<typeof setTimeout> | null;
  terminal: PullEvent | null;
  subs: Set<(e: PullEvent) => void>;
  done: Promise<void>;
}

export interface PullDeps {
  /** The pinned Ollama address (null until discovery pinned one). */
  addr(): PinnedAddress | null;
  /** Discovery again (after a success or a delete). */
  rediscover(): Promise<void>;
  log: Logger;
  /** @default Date.now */
  now?: () => number;
}

/** An Ollama error message, shown only when short and printable [MB-13]. */
export function pullMessage(raw: string): string {
  const bytes = new TextEncoder().encode(raw);
  const printable = bytes.length > 0 && bytes.length <= PULL_ERROR_MESSAGE_MAX_BYTES &&
    bytes.every((b) => b >= 0x20 && b <= 0x7e);
  return printable ? raw : PULL_FAILED_TEXT;
}

export class PullManager {
  readonly #deps: PullDeps;
  readonly #now: () => number;
  readonly #pulls = new Map<string, Pull>();

  constructor(deps: PullDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  /** The running pull's name, if any. */
  get running(): string | null {
    for (const p of this.#pulls.values()) if (p.state === "running") return p.name;
    return null;
  }

  /** Starts a pull. Throws model_name_invalid, pull_busy or model_unavailable. */
  start(name: unknown): { pull_id: string } {
    if (!isModelName(name) || isHostQualified(name)) throw new AppError("model_name_invalid");
    if (this.running !== null) throw new AppError("pull_busy");
    const addr = this.#deps.addr();
    if (addr === null) throw new AppError("model_unavailable");
    const p: Pull = {
      id: crypto.randomUUID(),
      name,
      state: "running",
      ac: new AbortController(),
      sent: null,
      pending: null,
      lastSentAt: 0,
      timer: null,
      terminal: null,
      subs: new Set(),
      done: Promise.resolve(),
    };
    this.#pulls.set(p.id, p);
    this.#forgetOld();
    p.done = this.#run(p, addr);
    return { pull_id: p.id };
  }

  view(id: string): PullView | null {
    const p = this.#pulls.get(id);
    if (!p) return null;
    return { pull_id: p.id, name: p.name, state: p.state, last: p.terminal ?? p.sent };
  }

  /**
   * Subscribes to a pull: the latest progress (or the terminal) at once, then
   * updates; `fn(null)`-free — the caller closes after a terminal event.
   */
  subscribe(id: string, fn: (e: PullEvent) => void): () => void {
    const p = this.#pulls.get(id);
    if (!p) throw new AppError("pull_not_found");
    if (p.subs.size >= PULL_SSE_SUBSCRIBERS_MAX) throw new AppError("too_many_connections");
    const first = p.terminal ?? p.sent;
    if (p.terminal === null) p.subs.add(fn);
    if (first !== null) queueMicrotask(() => fn(first));
    return () => p.subs.delete(fn);
  }

  /** Cancels a running pull (idempotent for a finished one). */
  cancel(id: string): PullView {
    const p = this.#pulls.get(id);
    if (!p) throw new AppError("pull_not_found");
    if (p.state === "running") p.ac.abort();
    return this.view(id)!;
  }

  /** Deletes a model on Ollama; the caller checked the name and that no Run uses it. */
  async remove(name: string, signal: AbortSignal): Promise<void> {
    if (this.running === name) throw new AppError("pull_busy");
    const addr = this.#deps.addr();
    if (addr === null) throw new AppError("model_unavailable");
    let r;
    try {
      r = await requestJson(addr, "DELETE", "/api/delete", { model: name }, signal, 4096);
    } catch (err) {
      if (err instanceof TransportError) throw new AppError("model_unavailable");
      throw err;
    }
    if (r.status !== 200 && r.status !== 404) throw new AppError("model_provider_error");
    await this.#deps.rediscover();
    if (r.status === 404) throw new AppError("model_not_found");
  }

  /** Cancels every running pull and waits for them (shutdown). */
  async close(): Promise<void> {
    for (const p of this.#pulls.values()) p.ac.abort();
    await Promise.allSettled([...this.#pulls.values()].map((p) => p.done));
  }

  #forgetOld(): void {
    const finished = [...this.#pulls.values()].filter((p) => p.state !== "running");
    for (const p of finished.slice(0, Math.max(0, finished.length - PULLS_REMEMBERED_MAX))) {
      this.#pulls.delete(p.id);
    }
  }

  #publish(p: Pull, e: PullEvent): void {
    for (const fn of [...p.subs]) {
      try {
        fn(e);
      } catch (err) {
        p.subs.delete(fn); // a failing subscriber (closed stream) never stops the pull
        this.#deps.log.warn("model.pull_subscriber_failed", {
          error: errorName(err),
        });
      }
    }
  }

  /** Progress, coalesced ≥ PULL_PROGRESS_COALESCE_MS apart; the latest always goes out. */
  #progress(p: Pull, e: PullEvent): void {
    const wait = p.lastSentAt + PULL_PROGRESS_COALESCE_MS - this.#now();
    if (p.sent === null || wait <= 0) return this.#send(p, e);
    p.pending = e;
    p.timer ??= setTimeout(() => {
      p.timer = null;
      if (p.pending !== null && p.state === "running") this.#send(p, p.pending);
    }, wait);
  }

  #send(p: Pull, e: PullEvent): void {
    p.pending = null;
    p.sent = e;
    p.lastSentAt = this.#now();
    this.#publish(p, e);
  }

  #finish(p: Pull, e: PullEvent): void {
    if (p.timer !== null) clearTimeout(p.timer);
    p.timer = null;
    if (p.pending !== null) this.#send(p, p.pending); // the latest progress before the end
    p.state = e.kind === "pull.succeeded"
      ? "succeeded"
      : e.kind === "pull.cancelled"
      ? "cancelled"
      : "failed";
    p.terminal = e;
    this.#publish(p, e);
    p.subs.clear();
    this.#deps.log.info("model.pull_finished", { state: p.state });
  }

  async #run(p: Pull, addr: PinnedAddress): Promise<void> {
    let idle: ReturnType<typeof setTimeout> | undefined;
    let stalled = false;
    const ac = new AbortController();
    const onCancel = () => ac.abort();
    p.ac.signal.addEventListener("abort", onCancel, { once: true });
    const rearm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => (stalled = true, ac.abort()), PULL_IDLE_MS);
    };
    const ended = (): PullEvent =>
      p.ac.signal.aborted
        ? { kind: "pull.cancelled" }
        : { kind: "pull.failed", message: stalled ? STALLED_TEXT : UNREACHABLE_TEXT };
    rearm();
    try {
      const res = await httpRequest(addr, {
        method: "POST",
        path: "/api/pull",
        body: new TextEncoder().encode(JSON.stringify({ model: p.name, stream: true })),
        signal: ac.signal,
      });
      try {
        if (res.status !== 200) {
          const text = await readErrorBody(res);
          const parsed = PullLineSchema.safeParse(safeJson(text));
          const msg = parsed.success && parsed.data.error
            ? pullMessage(parsed.data.error)
            : PULL_FAILED_TEXT;
          return this.#finish(p, { kind: "pull.failed", message: msg });
        }
        const reader = new NdjsonReader(res, {
          maxBytes: PULL_STREAM_MAX_BYTES,
          maxFrames: PULL_STREAM_MAX_LINES,
          maxLineBytes: PULL_LINE_MAX_BYTES,
        });
        for (;;) {
          const line = await reader.next();
          if (line === null) {
            return this.#finish(p, { kind: "pull.failed", message: PULL_FAILED_TEXT });
          }
          rearm();
          const parsed = PullLineSchema.safeParse(safeJson(line));
          if (!parsed.success) {
            return this.#finish(p, { kind: "pull.failed", message: PULL_FAILED_TEXT });
          }
          const l = parsed.data;
          if (l.error !== undefined) {
            return this.#finish(p, { kind: "pull.failed", message: pullMessage(l.error) });
          }
          if (l.status === "success") {
            clearTimeout(idle);
            await this.#deps.rediscover(); // the new model joins the catalog [MB-13]
            return this.#finish(p, { kind: "pull.succeeded", name: p.name });
          }
          this.#progress(p, {
            kind: "pull.progress",
            status: statusText(l.status),
            ...(l.completed !== undefined ? { completed: l.completed } : {}),
            ...(l.total !== undefined ? { total: l.total } : {}),
          });
        }
      } finally {
        res.close();
      }
    } catch (err) {
      if (err instanceof TransportError) return this.#finish(p, ended());
      if (err instanceof StreamBoundError) {
        return this.#finish(p, { kind: "pull.failed", message: PULL_FAILED_TEXT });
      }
      this.#deps.log.error("model.pull_crashed", {
        error: errorName(err),
      });
      return this.#finish(p, { kind: "pull.failed", message: PULL_FAILED_TEXT });
    } finally {
      clearTimeout(idle);
      p.ac.signal.removeEventListener("abort", onCancel);
    }
  }
}

/** A progress status shown as is only when short and printable. */
function statusText(raw: string | undefined): string {
  return raw !== undefined && raw.length <= 128 && /^[\x20-\x7e]+$/.test(raw) ? raw : "pulling";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
