/**
 * Ollama transport helpers over the pinned HTTP client: bounded JSON requests
 * (qualification) and a bounded NDJSON line reader for the streamed
 * `POST /api/chat` response.
 *
 * What this file enforces [MB-6]: the raw provider stream of one attempt is at
 * most PROVIDER_STREAM_MAX_BYTES and PROVIDER_STREAM_MAX_FRAMES lines, each
 * line at most PROVIDER_FRAME_MAX_BYTES; crossing any bound throws
 * StreamBoundError and the caller closes the connection. Error bodies are read
 * up to PROVIDER_ERROR_BODY_MAX_BYTES only.
 */
import {
  PROVIDER_ERROR_BODY_MAX_BYTES,
  PROVIDER_FRAME_MAX_BYTES,
  PROVIDER_STREAM_MAX_BYTES,
  PROVIDER_STREAM_MAX_FRAMES,
} from "../limits.ts";
import {
  httpRequest,
  type HttpResponse,
  type PinnedAddress,
  TransportError,
} from "./http_client.ts";

export class StreamBoundError extends Error {
  override name = "StreamBoundError";
}

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/** Sends a JSON request and reads a bounded body. Throws TransportError on failure. */
export async function requestJson(
  addr: PinnedAddress,
  method: "GET" | "POST" | "DELETE",
  path: string,
  body: unknown,
  signal: AbortSignal,
  maxBytes = 256 * 1024,
): Promise<{ status: number; text: string | null; tooLarge: boolean }> {
  const res = await httpRequest(addr, {
    method,
    path,
    body: body === undefined ? undefined : enc.encode(JSON.stringify(body)),
    signal,
  });
  try {
    const bytes = await res.readAll(maxBytes);
    return {
      status: res.status,
      text: bytes === null ? null : decodeUtf8(bytes),
      tooLarge: bytes === null,
    };
  } finally {
    res.close();
  }
}

/** Reads a non-200 response's body for classification (bounded, lossy-safe). */
export async function readErrorBody(res: HttpResponse): Promise<string> {
  const bytes = await res.readAll(PROVIDER_ERROR_BODY_MAX_BYTES);
  return bytes === null ? "" : (decodeUtf8(bytes) ?? "");
}

function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return dec.decode(bytes);
  } catch (err) {
    if (err instanceof TypeError) return null;
    throw err;
  }
}

export interface NdjsonBounds {
  /** @default PROVIDER_STREAM_MAX_BYTES */
  maxBytes: number;
  /** @default PROVIDER_STREAM_MAX_FRAMES */
  maxFrames: number;
  /** @default PROVIDER_FRAME_MAX_BYTES */
  maxLineBytes: number;
}

export const DEFAULT_NDJSON_BOUNDS: NdjsonBounds = Object.freeze({
  maxBytes: PROVIDER_STREAM_MAX_BYTES,
  maxFrames: PROVIDER_STREAM_MAX_FRAMES,
  maxLineBytes: PROVIDER_FRAME_MAX_BYTES,
});

/** Splits a response body into NDJSON lines under the raw stream bounds. */
export class NdjsonReader {
  #res: HttpResponse;
  #bounds: NdjsonBounds;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #queue: Uint8Array[] = [];
  #eof = false;
  bytes = 0;
  frames = 0;

  constructor(res: HttpResponse, bounds: NdjsonBounds = DEFAULT_NDJSON_BOUNDS) {
    this.#res = res;
    this.#bounds = bounds;
  }

  /**
   * The next non-empty line, or null at end of body. Throws StreamBoundError
   * past a bound, TransportError on I/O failure or invalid UTF-8.
   */
  async next(): Promise<string | null> {
    for (;;) {
      const line = this.#queue.shift();
      if (line !== undefined) {
        if (line.length === 0) continue;
        if (++this.frames > this.#bounds.maxFrames) throw new StreamBoundError("too many frames");
        const text = decodeUtf8(line);
        if (text === null) throw new TransportError("io", "invalid UTF-8 in stream");
        return text;
      }
      if (this.#eof) return null;
      const chunk = await this.#res.read();
      if (chunk === null) {
        this.#eof = true;
        if (this.#pendingBytes > 0) this.#queue.push(this.#take(this.#pendingBytes));
        continue;
      }
      this.bytes += chunk.length;
      if (this.bytes > this.#bounds.maxBytes) throw new StreamBoundError("stream too large");
      this.#split(chunk);
    }
  }

  #split(chunk: Uint8Array): void {
    let from = 0;
    for (;;) {
      const i = chunk.indexOf(10, from);
      if (i < 0) break;
      this.#pending.push(chunk.subarray(from, i));
      this.#pendingBytes += i - from;
      this.#checkLine();
      this.#queue.push(this.#take(this.#pendingBytes));
      from = i + 1;
    }
    if (from < chunk.length) {
      this.#pending.push(chunk.subarray(from));
      this.#pendingBytes += chunk.length - from;
      this.#checkLine();
    }
  }

  #checkLine(): void {
    if (this.#pendingBytes > this.#bounds.maxLineBytes) throw new StreamBoundError("line too long");
  }

  #take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of this.#pending) {
      out.set(p, o);
      o += p.length;
    }
    this.#pending = [];
    this.#pendingBytes = 0;
    return out.at(-1) === 13 ? out.subarray(0, n - 1) : out;
  }
}

export { TransportError };
