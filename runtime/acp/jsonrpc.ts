/**
 * JSON-RPC 2.0 over newline-delimited JSON, the framing of the Agent Client
 * Protocol on a runner's stdio [LC-6]. Our own implementation: the runner is
 * operator-owned code the product does not trust for anything it owns.
 *
 * What this file enforces:
 * - a line is at most ACP_LINE_MAX_BYTES (counted before decoding); a longer
 *   line, a line that is not JSON, or JSON that is not one JSON-RPC 2.0
 *   message (batches included) ends the connection with
 *   `runner_protocol_error` — never a partial parse, never a guess;
 * - a response must answer an id this side issued and is still waiting on;
 * - at most ACP_PEER_REQUESTS_MAX requests of the peer are open at once;
 * - every request this side sends has a timeout or a signal; when the
 *   connection ends (EOF, fault, close) every waiter is rejected with the
 *   connection's fault code, so nothing waits forever.
 * What it leaves to others: method semantics (client.ts), the process (process.ts).
 */
import * as z from "zod";
import { ACP_LINE_MAX_BYTES, ACP_PEER_REQUESTS_MAX } from "../limits.ts";
import type { ErrorCode } from "../errors.ts";
import { LineSplitter, LineTooLongError } from "../protocol/line_splitter.ts";
import { errorName } from "../log.ts";

export type JsonRpcId = number | string;

/** A JSON-RPC error answer (ours to the peer, or the peer's to us). */
export class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
  }
}

/** The connection ended for this fixed reason; every waiter sees it. */
export class AcpFault extends Error {
  constructor(readonly code: ErrorCode, detail: string) {
    super(`${code}: ${detail}`);
  }
}

// Peer envelopes: validated, unknown members dropped (tolerant of newer peers).
const Id = z.union([z.number().int(), z.string().max(128)]);
const ResultMsg = z.object({ jsonrpc: z.literal("2.0"), id: Id, result: z.unknown() });
const ErrorMsg = z.object({
  jsonrpc: z.literal("2.0"),
  id: Id.nullable(),
  error: z.object({ code: z.number().int(), message: z.string().max(4096), data: z.unknown() }),
});
const RequestMsg = z.object({
  jsonrpc: z.literal("2.0"),
  id: Id,
  method: z.string().min(1).max(128),
  params: z.unknown().optional(),
});
const NotificationMsg = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.string().min(1).max(128),
  params: z.unknown().optional(),
});

export interface RpcHandlers {
  /** A peer request; resolve with the result, or throw RpcError. */
  request(method: string, params: unknown): Promise<unknown>;
  /** A peer notification; throw AcpFault to end the connection. */
  notification(method: string, params: unknown): void;
}

export interface RpcConnectionOptions {
  /** The peer's stdout. */
  readable: ReadableStream<Uint8Array>;
  /** Writes bytes to the peer's stdin. */
  write(bytes: Uint8Array): Promise<void>;
  handlers: RpcHandlers;
  /** @default ACP_LINE_MAX_BYTES */
  lineMaxBytes?: number;
}

interface Waiter {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

const enc = new TextEncoder();

export class RpcConnection {
  #next = 1;
  readonly #waiters = new Map<JsonRpcId, Waiter>();
  #peerOpen = 0;
  #fault: AcpFault | null = null;
  #writes: Promise<void> = Promise.resolve();
  #reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  readonly #o: RpcConnectionOptions;
  #resolveEnded!: (f: AcpFault) => void;
  /** Resolves once, with the fault that ended the connection. */
  readonly ended: Promise<AcpFault>;

  constructor(o: RpcConnectionOptions) {
    this.#o = o;
    this.ended = new Promise((r) => (this.#resolveEnded = r));
    this.#read().catch((err) => this.close(new AcpFault("runner_crashed", String(err))));
  }

  get fault(): AcpFault | null {
    return this.#fault;
  }

  /** Ends the connection (idempotent): every waiter rejects with `fault`. */
  close(fault: AcpFault): void {
    if (this.#fault) return;
    this.#fault = fault;
    for (const w of this.#waiters.values()) w.reject(fault);
    this.#waiters.clear();
    this.#resolveEnded(fault);
    // Stop reading: a closed connection takes nothing more from the peer.
    this.#reader?.cancel().catch(() => undefined);
  }

  /** Sends a request; rejects with RpcError (peer error), AcpFault (connection) or on timeout. */
  request(
    method: string,
    params: unknown,
    opts: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<unknown> {
    if (this.#fault) return Promise.reject(this.#fault);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
        this.#waiters.delete(id);
      };
      const onAbort = () => {
        done();
        reject(new AcpFault("run_cancelled", "aborted"));
      };
      this.#waiters.set(id, {
        resolve: (v) => (done(), resolve(v)),
        reject: (e) => (done(), reject(e)),
      });
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          done();
          reject(new AcpFault("runner_timeout", `${method} unanswered`));
        }, opts.timeoutMs);
      }
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      this.#send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: unknown): void {
    if (this.#fault) return;
    this.#send({ jsonrpc: "2.0", method, params });
  }

  #send(msg: unknown): void {
    const bytes = enc.encode(JSON.stringify(msg) + "\n");
    this.#writes = this.#writes.then(() => this.#o.write(bytes)).catch((err) => {
      this.close(new AcpFault("runner_crashed", `write: ${errorName(err)}`));
    });
  }

  async #read(): Promise<void> {
    const max = this.#o.lineMaxBytes ?? ACP_LINE_MAX_BYTES;
    const dec = new TextDecoder("utf-8", { fatal: true });
    const reader = this.#o.readable.getReader();
    this.#reader = reader;
    const splitter = new LineSplitter(max);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this.#fault) break;
        let lines: Uint8Array[];
        try {
          lines = splitter.push(value);
        } catch (err) {
          if (err instanceof LineTooLongError) return this.#protocol("line too long");
          throw err;
        }
        for (const line of lines) {
          let text: string;
          try {
            text = dec.decode(line);
          } catch {
            return this.#protocol("line is not UTF-8");
          }
          if (text.trim() === "") continue;
          this.#dispatch(text);
          if (this.#fault) return;
        }
      }
      this.close(new AcpFault("runner_crashed", "end of output"));
    } finally {
      this.#reader = null;
      reader.releaseLock();
    }
  }

  #protocol(why: string): void {
    this.close(new AcpFault("runner_protocol_error", why));
  }

  #dispatch(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return this.#protocol("not JSON");
    }
    if (typeof msg !== "object" || msg === null || Array.isArray(msg)) {
      return this.#protocol("not one JSON-RPC message");
    }
    const m = msg as Record<string, unknown>;
    if ("method" in m) {
      if ("id" in m) {
        const r = RequestMsg.safeParse(m);
        if (!r.success) return this.#protocol("invalid request");
        return this.#onRequest(r.data.id, r.data.method, r.data.params);
      }
      const n = NotificationMsg.safeParse(m);
      if (!n.success) return this.#protocol("invalid notification");
      try {
        this.#o.handlers.notification(n.data.method, n.data.params);
      } catch (err) {
        if (err instanceof AcpFault) return this.close(err);
        throw err;
      }
      return;
    }
    if ("result" in m) {
      const r = ResultMsg.safeParse(m);
      if (!r.success) return this.#protocol("invalid response");
      const w = this.#waiters.get(r.data.id);
      if (!w) return this.#protocol("response to no open request");
      return w.resolve(r.data.result);
    }
    const e = ErrorMsg.safeParse(m);
    if (!e.success || e.data.id === null) return this.#protocol("invalid message");
    const w = this.#waiters.get(e.data.id);
    if (!w) return this.#protocol("error to no open request");
    w.reject(new RpcError(e.data.error.code, e.data.error.message, e.data.error.data));
  }

  #onRequest(id: JsonRpcId, method: string, params: unknown): void {
    if (this.#peerOpen >= ACP_PEER_REQUESTS_MAX) return this.#protocol("too many open requests");
    this.#peerOpen++;
    this.#o.handlers.request(method, params).then(
      (result) => this.#send({ jsonrpc: "2.0", id, result: result ?? null }),
      (err) => {
        if (err instanceof AcpFault) return this.close(err);
        const e = err instanceof RpcError ? err : new RpcError(-32603, "Internal error");
        this.#send({
          jsonrpc: "2.0",
          id,
          error: e.data === undefined
            ? { code: e.code, message: e.message }
            : { code: e.code, message: e.message, data: e.data },
        });
      },
    ).finally(() => this.#peerOpen--);
  }
}

/** JSON-RPC error codes this side answers with. */
export const RPC = {
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** ACP: the resource is not reachable for this client (path refused, token, policy). */
  refused: -32000,
} as const;
