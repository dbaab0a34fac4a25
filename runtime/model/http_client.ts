/**
 * A minimal HTTP/1.1 client for the one trusted Ollama endpoint. One request
 * per TCP connection (`Connection: close`) to the pinned numeric address.
 *
 * What this file enforces: no proxy (environment variables are never read), no
 * redirects, no connection pool shared with anything else, bounded response
 * headers; `close()` (or the abort signal) closes the socket at once, so the
 * provider sees the disconnect promptly and stops generating [MB-5, MB-7].
 * Body framing: Content-Length, chunked, or read-until-close (the wire rules
 * are protocol/http1.ts's, shared with the MCP client).
 */
import { PROVIDER_HEADER_MAX_BYTES } from "../limits.ts";
import {
  addHeaderLine,
  type BodyFraming,
  bodyFraming,
  parseChunkSize,
  parseStatusLine,
  requestHead,
} from "../protocol/http1.ts";
import { concatBytes } from "../protocol/bytes.ts";

export interface PinnedAddress {
  /** Numeric IPv4/IPv6 address resolved once at qualification [MB-2]. */
  readonly ip: string;
  readonly port: number;
  /** Value of the Host header (the operator's host name and port). */
  readonly hostHeader: string;
}

export interface HttpRequest {
  method: "GET" | "POST" | "DELETE";
  path: string;
  body?: Uint8Array;
  signal?: AbortSignal;
}

/** Transport-level failure before a complete response head: connect, reset, bad head. */
export class TransportError extends Error {
  override name = "TransportError";
  constructor(readonly kind: "connect" | "io" | "head" | "aborted", message: string) {
    super(message);
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** An open response: status, lower-cased headers, and a body reader. */
export class HttpResponse {
  #conn: Deno.Conn;
  #buf: Uint8Array;
  #start = 0;
  #end = 0;
  #closed = false;
  #mode: "length" | "chunked" | "eof";
  #remaining: number;
  #done = false;
  #needCrlf = false;
  #onAbort: () => void;
  #signal?: AbortSignal;

  constructor(
    conn: Deno.Conn,
    buf: Uint8Array,
    start: number,
    end: number,
    readonly status: number,
    readonly headers: ReadonlyMap<string, string>,
    framing: BodyFraming,
    signal?: AbortSignal,
  ) {
    this.#conn = conn;
    this.#buf = buf;
    this.#start = start;
    this.#end = end;
    this.#mode = framing.mode;
    this.#remaining = framing.mode === "length" ? framing.length : 0;
    this.#signal = signal;
    this.#onAbort = () => this.close();
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the socket now (idempotent). Pending reads reject. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#signal?.removeEventListener("abort", this.#onAbort);
    try {
      this.#conn.close();
    } catch (err) {
      if (!(err instanceof Deno.errors.BadResource)) throw err;
    }
  }

  async #fill(): Promise<boolean> {
    if (this.#closed) throw new TransportError("aborted", "connection closed");
    if (this.#start === this.#end) {
      this.#start = 0;
      this.#end = 0;
    } else if (this.#end === this.#buf.length) {
      if (this.#start > 0) {
        this.#buf.copyWithin(0, this.#start, this.#end);
        this.#end -= this.#start;
        this.#start = 0;
      } else {
        const bigger = new Uint8Array(this.#buf.length * 2);
        bigger.set(this.#buf.subarray(0, this.#end));
        this.#buf = bigger;
      }
    }
    let n: number | null;
    try {
      n = await this.#conn.read(this.#buf.subarray(this.#end));
    } catch (err) {
      if (this.#closed) throw new TransportError("aborted", "connection closed");
      if (err instanceof Deno.errors.ConnectionReset || err instanceof Deno.errors.BadResource) {
        throw new TransportError("io", "connection reset");
      }
      throw err;
    }
    if (n === null) return false;
    this.#end += n;
    return true;
  }

  async #readLine(): Promise<string> {
    for (;;) {
      const i = this.#buf.subarray(this.#start, this.#end).indexOf(10);
      if (i >= 0) {
        const line = dec.decode(this.#buf.subarray(this.#start, this.#start + i));
        this.#start += i + 1;
        return line.endsWith("\r") ? line.slice(0, -1) : line;
      }
      if (this.#end - this.#start > 256) throw new TransportError("io", "chunk header too long");
      if (!(await this.#fill())) throw new TransportError("io", "eof in chunk header");
    }
  }

  /** Next body bytes, or null at the end of the body. Throws TransportError on I/O failure. */
  async read(): Promise<Uint8Array | null> {
    if (this.#done) return null;
    if (this.#mode === "chunked" && this.#remaining === 0) {
      if (this.#needCrlf) {
        if ((await this.#readLine()) !== "") throw new TransportError("io", "bad chunk end");
        this.#needCrlf = false;
      }
      const size = parseChunkSize(await this.#readLine(), 12);
      if (size === null) throw new TransportError("io", "bad chunk size");
      if (size === 0) {
        this.#done = true;
        return null;
      }
      this.#remaining = size;
    }
    if (this.#mode === "length" && this.#remaining === 0) {
      this.#done = true;
      return null;
    }
    if (this.#start === this.#end && !(await this.#fill())) {
      if (this.#mode === "eof") {
        this.#done = true;
        return null;
      }
      throw new TransportError("io", "eof inside body");
    }
    let take = this.#end - this.#start;
    if (this.#mode !== "eof") take = Math.min(take, this.#remaining);
    const out = this.#buf.slice(this.#start, this.#start + take);
    this.#start += take;
    if (this.#mode === "eof") return out;
    this.#remaining -= take;
    if (this.#mode === "chunked" && this.#remaining === 0) this.#needCrlf = true;
    return out;
  }

  /** Reads at most `max` body bytes; returns null when the body is longer. */
  async readAll(max: number): Promise<Uint8Array | null> {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const c = await this.read();
      if (c === null) break;
      total += c.length;
      if (total > max) return null;
      parts.push(c);
    }
    return concatBytes(parts, total);
  }
}

/** Sends one request and reads the response head. Throws TransportError. */
export async function httpRequest(addr: PinnedAddress, req: HttpRequest): Promise<HttpResponse> {
  if (req.signal?.aborted) throw new TransportError("aborted", "aborted before connect");
  let conn: Deno.Conn;
  try {
    // SECURITY: the only outbound connection the product makes: the pinned provider address.
    // The signal reaches the connect itself: a host that drops SYNs would otherwise hold the
    // attempt past every timer and cancel for the kernel's connect timeout (~2 min).
    conn = await Deno.connect({
      hostname: addr.ip,
      port: addr.port,
      transport: "tcp",
      signal: req.signal,
    });
  } catch (err) {
    if (err instanceof Deno.errors.PermissionDenied) throw err;
    if (req.signal?.aborted) throw new TransportError("aborted", "aborted during connect");
    throw new TransportError("connect", "connect failed");
  }
  if (req.signal?.aborted) {
    conn.close(); // aborted as the connect completed: send nothing
    throw new TransportError("aborted", "aborted during connect");
  }
  const onAbort = () => {
    try {
      conn.close();
    } catch (err) {
      if (!(err instanceof Deno.errors.BadResource)) throw err;
    }
  };
  req.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const head = requestHead(req.method, req.path, [
      ["Host", addr.hostHeader],
      ["User-Agent", "agent-builder"],
      ["Accept", "application/x-ndjson, application/json"],
      ["Connection", "close"],
      ...(req.body
        ? [["Content-Type", "application/json"], [
          "Content-Length",
          String(req.body.length),
        ]] as const
        : []),
    ]);
    const headBytes = enc.encode(head);
    const all = new Uint8Array(headBytes.length + (req.body?.length ?? 0));
    all.set(headBytes);
    if (req.body) all.set(req.body, headBytes.length);
    let off = 0;
    while (off < all.length) off += await conn.write(all.subarray(off));
    const buf = new Uint8Array(8192);
    let end = 0;
    let headEnd = -1;
    let b = buf;
    while (headEnd < 0) {
      if (end === b.length) {
        if (b.length >= PROVIDER_HEADER_MAX_BYTES) {
          throw new TransportError("head", "head too large");
        }
        const bigger = new Uint8Array(b.length * 2);
        bigger.set(b);
        b = bigger;
      }
      const n = await conn.read(b.subarray(end));
      if (n === null) throw new TransportError("io", "eof before response head");
      end += n;
      headEnd = findHeadEnd(b, end);
    }
    const lines = dec.decode(b.subarray(0, headEnd)).split("\r\n");
    const status = parseStatusLine(lines[0]);
    if (status === null) throw new TransportError("head", "bad status line");
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      if (!addHeaderLine(headers, line)) throw new TransportError("head", "bad header line");
    }
    const framing = bodyFraming(headers);
    if (framing === null) throw new TransportError("head", "bad body framing");
    req.signal?.removeEventListener("abort", onAbort);
    return new HttpResponse(conn, b, headEnd + 4, end, status, headers, framing, req.signal);
  } catch (err) {
    req.signal?.removeEventListener("abort", onAbort);
    onAbort();
    if (err instanceof TransportError) throw err;
    if (req.signal?.aborted) throw new TransportError("aborted", "aborted");
    if (
      err instanceof Deno.errors.ConnectionReset || err instanceof Deno.errors.BadResource ||
      err instanceof Deno.errors.BrokenPipe || err instanceof Deno.errors.Interrupted
    ) {
      throw new TransportError("io", "connection failed");
    }
    throw err;
  }
}

function findHeadEnd(b: Uint8Array, end: number): number {
  for (let i = 0; i + 3 < end; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  }
  return -1;
}
