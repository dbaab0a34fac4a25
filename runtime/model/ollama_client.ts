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
import { LineSplitter, LineTooLongError } from "../protocol/line_splitter.ts";

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
  #splitter: LineSplitter;
  #queue: Uint8Array[] = [];
  #eof = false;
  bytes = 0;
  frames = 0;

  constructor(res: HttpResponse, bounds: NdjsonBounds = DEFAULT_NDJSON_BOUNDS) {
    this.#res = res;
    this.#bounds = bounds;
    this.#splitter = new LineSplitter(bounds.maxLineBytes);
  }

  /**
   * The next non-empty line (a trailing `\r` dropped), or null at end of body;
   * an unterminated last line counts. Throws StreamBoundError past a bound,
   * TransportError on I/O failure or invalid UTF-8.
   */
  async next(): Promise<string | null> {
    for (;;) {
      const raw = this.#queue.shift();
      if (raw !== undefined) {
        const line = raw.at(-1) === 13 ? raw.subarray(0, raw.length - 1) : raw;
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
        const last = this.#splitter.finish();
        if (last !== null) this.#queue.push(last);
        continue;
      }
      this.bytes += chunk.length;
      if (this.bytes > this.#bounds.maxBytes) throw new StreamBoundError("stream too large");
      try {
        for (const line of this.#splitter.push(chunk)) this.#queue.push(line);
      } catch (err) {
        if (err instanceof LineTooLongError) throw new StreamBoundError("line too long");
        throw err;
      }
    }
  }
}

export { TransportError };
