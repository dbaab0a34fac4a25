/**
 * HTTP/1.1 request framing for the connection guard [GW-1] (pure, no I/O).
 *
 * The guard must know where each request on a connection starts, where its
 * head ends and where its body ends, to enforce the head and body deadlines
 * and to stamp every request with its connection's token (the server learns
 * the real peer from that token, never from a client header). This module
 * reads the client's byte stream incrementally and says what to forward.
 *
 * It is deliberately STRICTER than the server's own parser, so the two can
 * never disagree on where a message ends (no request smuggling between them):
 * CRLF only (a bare CR or LF refuses), no obs-fold, an ASCII request target,
 * HTTP/1.0 or 1.1 only, header names of token characters, values without
 * controls; Content-Length a single run of digits (repeats must be equal);
 * Transfer-Encoding exactly `chunked`, never with Content-Length, never on
 * HTTP/1.0; chunk sizes ≤ 15 hex digits with no whitespace; no CONNECT; a
 * client-sent token header refuses. Anything refused ends the connection.
 * Empty lines before a request line are dropped (RFC 9112 §2.2). A head over
 * MAX_REQUEST_HEAD_BYTES refuses with 431; prior-knowledge HTTP/2 ("PRI ")
 * is refused as soon as its first four bytes arrive.
 */
import { CHUNK_LINE_MAX_BYTES, MAX_REQUEST_HEAD_BYTES } from "../limits.ts";

/** The header the guard adds to every request it relays (lower-case). */
export const GUARD_TOKEN_HEADER = "x-agent-builder-conn";

export type FramePhase = "idle" | "head" | "body";

export type FrameError = "bad_request" | "headers_too_large" | "http2";

export interface FrameStep {
  /** Bytes to relay to the server, in order (the head with the token line added). */
  forward: Uint8Array[];
  /** Set when the stream is refused: relay `forward`, then end the connection. */
  error: FrameError | null;
}

const CR = 13, LF = 10;
const TCHAR = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]";
const REQUEST_LINE = new RegExp(`^(${TCHAR}+) ([\\x21-\\x7e]+) HTTP/1\\.([01])$`);
const HEADER_LINE = new RegExp(`^(${TCHAR}+):[\\t ]*([\\t\\x20-\\x7e\\x80-\\xff]*?)[\\t ]*$`);
const CHUNK_LINE = /^([0-9A-Fa-f]{1,15})(;[\t\x20-\x7e\x80-\xff]*)?$/;
const H2_START = "PRI ";

/** Bytes as code points 0–255 (TextDecoder's "latin1" is windows-1252, which remaps 0x80–0x9F). */
function bytesText(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 4096) {
    s += String.fromCharCode(...b.subarray(i, Math.min(b.length, i + 4096)));
  }
  return s;
}

/** Incremental framer for one client connection. */
export class RequestFramer {
  #token: Uint8Array;
  #phase: FramePhase = "idle";
  /** Head bytes (or one chunk-size / trailer / CRLF line) collected so far; never copied twice. */
  #scratch: Uint8Array | null = null;
  #len = 0;
  /** Body mode: "length" counts `#left`; chunked walks the sub-states. */
  #body: "length" | "size" | "data" | "data_crlf" | "trailer" = "length";
  #left = 0;
  #trailerBytes = 0;
  #failed: FrameError | null = null;
  /** Heads relayed so far. */
  requests = 0;

  /** `tokenLine`: the full header line to add, e.g. `x-agent-builder-conn: …\r\n`. */
  constructor(tokenLine: string) {
    this.#token = new TextEncoder().encode(tokenLine);
  }

  get phase(): FramePhase {
    return this.#phase;
  }

  push(chunk: Uint8Array): FrameStep {
    const forward: Uint8Array[] = [];
    if (this.#failed) return { forward, error: this.#failed };
    let i = 0;
    while (i < chunk.length) {
      const step = this.#phase === "body"
        ? this.#stepBody(chunk, i, forward)
        : this.#stepHead(chunk, i, forward);
      if (typeof step !== "number") {
        this.#failed = step;
        return { forward, error: step };
      }
      i = step;
    }
    return { forward, error: null };
  }

  /** Appends to the scratch buffer; false when it would pass `max`. */
  #append(bytes: Uint8Array, max: number): boolean {
    if (this.#len + bytes.length > max) return false;
    this.#scratch ??= new Uint8Array(MAX_REQUEST_HEAD_BYTES);
    this.#scratch.set(bytes, this.#len);
    this.#len += bytes.length;
    return true;
  }

  /** A copy of the collected bytes; the buffer is then empty. */
  #take(): Uint8Array {
    const out = this.#scratch!.slice(0, this.#len);
    this.#len = 0;
    return out;
  }

  /** Collects head bytes from `i`; returns the next index, or an error. */
  #stepHead(chunk: Uint8Array, i: number, forward: Uint8Array[]): number | FrameError {
    if (this.#phase === "idle") {
      // Empty lines before the request line are dropped, not relayed.
      while (i < chunk.length && (chunk[i] === CR || chunk[i] === LF)) i++;
      if (i === chunk.length) return i;
      this.#phase = "head";
    }
    const prior = this.#len;
    // The head ends at the first CRLFCRLF; only the newly added bytes (and the
    // three before them) are scanned, so a dribbled head costs linear time.
    const room = MAX_REQUEST_HEAD_BYTES - prior;
    const part = chunk.subarray(i, i + Math.min(chunk.length - i, room + 1));
    if (!this.#append(part.subarray(0, Math.min(part.length, room)), MAX_REQUEST_HEAD_BYTES)) {
      return "headers_too_large";
    }
    const buf = this.#scratch!;
    if (prior < H2_START.length && this.#len >= H2_START.length) {
      if (bytesText(buf.subarray(0, H2_START.length)) === H2_START) return "http2";
    }
    let end = -1;
    for (let k = Math.max(3, prior); k < this.#len; k++) {
      if (buf[k] === LF && buf[k - 1] === CR && buf[k - 2] === LF && buf[k - 3] === CR) {
        end = k + 1;
        break;
      }
    }
    if (end < 0) {
      if (part.length > room) return "headers_too_large";
      return i + part.length;
    }
    // Bytes after the head's end belong to the body or the next request.
    const used = end - prior;
    this.#len = end;
    const head = this.#take();
    const r = this.#parseHead(head, forward);
    if (r !== null) return r;
    return i + used;
  }

  /** Validates a complete head, relays it with the token line, and enters the body. */
  #parseHead(head: Uint8Array, forward: Uint8Array[]): FrameError | null {
    const text = bytesText(head.subarray(0, head.length - 4));
    const lines = text.split("\r\n");
    for (const l of lines) if (l.includes("\r") || l.includes("\n")) return "bad_request";
    const rl = REQUEST_LINE.exec(lines[0]);
    if (!rl || rl[1] === "CONNECT") return "bad_request";
    const http10 = rl[3] === "0";
    let length: string | null = null;
    let chunked = false;
    let te = 0;
    for (const line of lines.slice(1)) {
      const h = HEADER_LINE.exec(line);
      if (!h) return "bad_request";
      const name = h[1].toLowerCase();
      const value = h[2];
      if (name === GUARD_TOKEN_HEADER) return "bad_request";
      if (name === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length !== null && length !== value)) {
          return "bad_request";
        }
        length = value;
      } else if (name === "transfer-encoding") {
        te++;
        if (value.toLowerCase() !== "chunked") return "bad_request";
        chunked = true;
      }
    }
    if (te > 1 || (chunked && (length !== null || http10))) return "bad_request";
    const firstLineEnd = lines[0].length + 2;
    forward.push(head.subarray(0, firstLineEnd), this.#token, head.subarray(firstLineEnd));
    this.requests++;
    if (chunked) {
      this.#phase = "body";
      this.#body = "size";
    } else if (length !== null && Number(length) > 0) {
      this.#phase = "body";
      this.#body = "length";
      this.#left = Number(length);
    } else {
      this.#phase = "idle";
    }
    return null;
  }

  /** Relays body bytes from `i`; returns the next index, or an error. */
  #stepBody(chunk: Uint8Array, i: number, forward: Uint8Array[]): number | FrameError {
    switch (this.#body) {
      case "length":
      case "data": {
        const n = Math.min(this.#left, chunk.length - i);
        forward.push(chunk.subarray(i, i + n));
        this.#left -= n;
        if (this.#left === 0) {
          if (this.#body === "length") this.#phase = "idle";
          else this.#body = "data_crlf";
        }
        return i + n;
      }
      case "data_crlf": {
        // Exactly CRLF after a chunk's data; collected so a split CR|LF still checks.
        const part = chunk.subarray(i, i + 2 - this.#len);
        this.#append(part, 2);
        if (this.#len < 2) return i + part.length;
        const crlf = this.#take();
        if (crlf[0] !== CR || crlf[1] !== LF) return "bad_request";
        forward.push(crlf);
        this.#body = "size";
        return i + part.length;
      }
      case "size":
      case "trailer": {
        const nl = chunk.indexOf(LF, i);
        const end = nl < 0 ? chunk.length : nl + 1;
        const limit = this.#body === "size" ? CHUNK_LINE_MAX_BYTES : MAX_REQUEST_HEAD_BYTES;
        if (!this.#append(chunk.subarray(i, end), limit)) {
          return this.#body === "size" ? "bad_request" : "headers_too_large";
        }
        if (nl < 0) return end;
        const raw = this.#take();
        if (raw.length < 2 || raw[raw.length - 2] !== CR) return "bad_request";
        const line = bytesText(raw.subarray(0, raw.length - 2));
        if (line.includes("\r")) return "bad_request";
        if (this.#body === "size") {
          const m = CHUNK_LINE.exec(line);
          if (!m) return "bad_request";
          forward.push(raw);
          const size = parseInt(m[1], 16);
          if (size === 0) {
            this.#body = "trailer";
            this.#trailerBytes = 0;
          } else {
            this.#body = "data";
            this.#left = size;
          }
          return end;
        }
        // Trailer section: header-shaped lines until an empty one.
        if (line === "") {
          forward.push(raw);
          this.#phase = "idle";
          return end;
        }
        this.#trailerBytes += raw.length;
        if (this.#trailerBytes > MAX_REQUEST_HEAD_BYTES) return "headers_too_large";
        const h = HEADER_LINE.exec(line);
        if (!h || h[1].toLowerCase() === GUARD_TOKEN_HEADER) return "bad_request";
        forward.push(raw);
        return end;
      }
    }
  }
}
