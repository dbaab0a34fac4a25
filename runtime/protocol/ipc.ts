/**
 * Bounded, versioned NDJSON transport between the Control Plane and a Worker
 * [SB-4]. Both ends use it: one JSON object per `\n`-terminated line, each a
 * frame envelope `{ v, type, ... }`.
 *
 * What this file enforces: a line never exceeds IPC_LINE_MAX_BYTES (checked
 * while reading, before JSON parsing, so an endless line cannot grow memory),
 * a reader accepts at most IPC_LINES_MAX lines and IPC_TOTAL_BYTES_MAX bytes,
 * a read waits at most the given timeout, a line must be a strict envelope
 * and then pass the caller's frame schema. Every violation is the one fixed
 * code `worker_protocol_error`; the detail is for logs only.
 *
 * What it leaves to others: which frames exist (runtime/protocol/worker_frames.ts
 * and the sandbox frames below), how many rounds a Run may have (the
 * supervisor counts sends against IPC_ROUNDS_MAX).
 */
import * as z from "zod";
import { AppError } from "../errors.ts";
import { IPC_LINE_MAX_BYTES, IPC_LINES_MAX, IPC_TOTAL_BYTES_MAX } from "../limits.ts";
import { LineSplitter, LineTooLongError } from "./line_splitter.ts";
import { IPC_PROTOCOL_VERSION } from "./ipc_version.ts";

/** The envelope version every frame on the wire carries (shared with the work frames). */
export { IPC_PROTOCOL_VERSION };

/** The generic envelope: version and type; the frame schema checks the rest. */
export const FrameEnvelopeSchema = z.object({
  v: z.literal(IPC_PROTOCOL_VERSION),
  type: z.string().regex(/^[a-z][a-z0-9_.]{0,47}$/),
}).passthrough();

/** Sent by stage 2 once confined [SB-1]; its claims are re-verified through /proc. */
export const AttestationFrameSchema = z.object({
  v: z.literal(IPC_PROTOCOL_VERSION),
  type: z.literal("sandbox.attestation"),
  pid: z.number().int().min(2),
  ppid: z.number().int().min(1),
  landlock_abi: z.number().int().min(1).max(64),
  seccomp_mode: z.literal(2),
  no_new_privs: z.literal(true),
  capabilities_zero: z.literal(true),
}).strict();
export type AttestationFrame = z.infer<typeof AttestationFrameSchema>;

/** Sent by stage 1 or 2 when a confinement step failed: names the step, never free text. */
export const SandboxFailureFrameSchema = z.object({
  v: z.literal(IPC_PROTOCOL_VERSION),
  type: z.literal("sandbox.failure"),
  step: z.string().regex(/^[a-z0-9_]{1,32}$/),
  errno: z.number().int().min(0).max(4095),
}).strict();
export type SandboxFailureFrame = z.infer<typeof SandboxFailureFrameSchema>;

/** A protocol violation: always `worker_protocol_error`, detail for logs only. */
export function protocolError(detail: string): AppError {
  return new AppError("worker_protocol_error", detail);
}

/** Encodes one frame as a line; a frame larger than the line bound is refused. */
export function encodeFrame(frame: object, maxLineBytes = IPC_LINE_MAX_BYTES): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(frame) + "\n");
  if (bytes.length > maxLineBytes) throw protocolError(`outbound line ${bytes.length} bytes`);
  return bytes;
}

export interface NdjsonReaderOptions {
  /** Longest accepted line including `\n`. @default IPC_LINE_MAX_BYTES */
  maxLineBytes?: number;
  /** Lines accepted over the reader's life. @default IPC_LINES_MAX */
  maxLines?: number;
  /** Bytes accepted over the reader's life. @default IPC_TOTAL_BYTES_MAX */
  maxTotalBytes?: number;
}

/**
 * A byte source read directly, e.g. a Worker's stdin: `read` fills `p` and
 * resolves to the count, null at end of input. One read is one operation,
 * where a `ReadableStream` over the same pipe runs the stream machinery on
 * every chunk (and compiles it on the first one a Worker reads).
 */
export interface ByteSource {
  read(p: Uint8Array): Promise<number | null>;
  close(): void;
}

/** The largest chunk one read of a `ByteSource` takes (a pipe's default capacity). */
const SOURCE_CHUNK_BYTES = 64 * 1024;

/**
 * Reads envelopes from a byte stream. `next()` returns the next envelope-valid
 * JSON object, null at a clean end of stream, and throws `worker_protocol_error`
 * for anything else (including a timeout and a truncated last line).
 */
export class NdjsonReader {
  /** The next chunk, null at the end of input. */
  readonly #pull: () => Promise<Uint8Array | null>;
  readonly #release: () => Promise<void>;
  readonly #maxLines: number;
  readonly #maxTotal: number;
  readonly #splitter: LineSplitter;
  #queue: Uint8Array[] = [];
  #lines = 0;
  #total = 0;
  #done = false;
  #failed: AppError | null = null;

  constructor(source: ReadableStream<Uint8Array> | ByteSource, opts: NdjsonReaderOptions = {}) {
    if (source instanceof ReadableStream) {
      const reader = source.getReader();
      this.#pull = async () => {
        const r = await reader.read();
        return r.done ? null : r.value;
      };
      this.#release = () => reader.cancel();
    } else {
      // One buffer for every read: the splitter copies what it keeps.
      const buf = new Uint8Array(SOURCE_CHUNK_BYTES);
      this.#pull = async () => {
        const n = await source.read(buf);
        return n === null ? null : buf.subarray(0, n);
      };
      this.#release = () => {
        try {
          source.close();
        } catch (err) {
          if (!(err instanceof Deno.errors.BadResource)) throw err;
        }
        return Promise.resolve();
      };
    }
    // The bound counts the newline: a line's content is at most maxLineBytes - 1 bytes.
    this.#splitter = new LineSplitter((opts.maxLineBytes ?? IPC_LINE_MAX_BYTES) - 1);
    this.#maxLines = opts.maxLines ?? IPC_LINES_MAX;
    this.#maxTotal = opts.maxTotalBytes ?? IPC_TOTAL_BYTES_MAX;
  }

  /** Lines accepted so far. */
  get lines(): number {
    return this.#lines;
  }

  /** The next envelope (validated by `parse` when given); null at end of stream. */
  async next<T = z.infer<typeof FrameEnvelopeSchema>>(
    timeoutMs: number,
    parse?: (value: unknown) => { ok: true; frame: T } | { ok: false },
  ): Promise<T | null> {
    if (this.#failed) throw this.#failed;
    try {
      const line = await this.#line(timeoutMs);
      if (line === null) return null;
      return this.#decode(line, parse);
    } catch (err) {
      if (err instanceof AppError) {
        this.#failed = err;
        await this.#release().catch((e: unknown) => {
          if (!(e instanceof TypeError)) throw e;
        });
      }
      throw err;
    }
  }

  /** Stops reading and releases the stream. */
  async cancel(): Promise<void> {
    this.#done = true;
    await this.#release();
  }

  #decode<T>(
    line: Uint8Array,
    parse?: (value: unknown) => { ok: true; frame: T } | { ok: false },
  ): T {
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(line));
    } catch (err) {
      if (err instanceof SyntaxError || err instanceof TypeError) {
        throw protocolError("line is not UTF-8 JSON");
      }
      throw err;
    }
    const env = FrameEnvelopeSchema.safeParse(value);
    if (!env.success) throw protocolError("bad frame envelope");
    if (!parse) return env.data as T;
    const r = parse(value);
    if (!r.ok) throw protocolError(`frame ${env.data.type} does not match its schema`);
    return r.frame;
  }

  async #line(timeoutMs: number): Promise<Uint8Array | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.#queue.shift();
      if (line !== undefined) {
        if (++this.#lines > this.#maxLines) throw protocolError("too many lines");
        return line;
      }
      if (this.#done) {
        if (this.#splitter.finish() !== null) throw protocolError("truncated final line");
        return null;
      }
      const chunk = await this.#read(deadline - Date.now());
      if (chunk === null) {
        this.#done = true;
        continue;
      }
      this.#total += chunk.length;
      if (this.#total > this.#maxTotal) throw protocolError("total bytes exceeded");
      try {
        for (const l of this.#splitter.push(chunk)) this.#queue.push(l);
      } catch (err) {
        if (err instanceof LineTooLongError) throw protocolError("line too long");
        throw err;
      }
    }
  }

  async #read(remainingMs: number): Promise<Uint8Array | null> {
    if (remainingMs <= 0) throw protocolError("read timeout");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), remainingMs);
    });
    try {
      const r = await Promise.race([this.#pull(), timeout]);
      if (r === "timeout") throw protocolError("read timeout");
      return r;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * A byte sink written synchronously on the caller's thread, e.g. a Worker's
 * stdout pipe (blocking): one `write(2)` per frame where the stream of
 * `Deno.stdout.writable` hands every write to a blocking-pool thread and
 * back (two thread wake-ups per frame).
 */
export interface SyncByteSink {
  writeSync(p: Uint8Array): number;
  close(): void;
}

/** Writes frames to a byte sink, one line each, serialised so lines never interleave. */
export class NdjsonWriter {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array> | null;
  readonly #sync: SyncByteSink | null;
  readonly #maxLine: number;
  #chain: Promise<void> = Promise.resolve();

  constructor(
    sink: WritableStream<Uint8Array> | SyncByteSink,
    maxLineBytes = IPC_LINE_MAX_BYTES,
  ) {
    if (sink instanceof WritableStream) {
      this.#writer = sink.getWriter();
      this.#sync = null;
    } else {
      this.#writer = null;
      this.#sync = sink;
    }
    this.#maxLine = maxLineBytes;
  }

  send(frame: object): Promise<void> {
    const bytes = encodeFrame(frame, this.#maxLine);
    if (this.#sync !== null) {
      // Synchronous: a line is written whole before the next send can start.
      try {
        for (let off = 0; off < bytes.length;) off += this.#sync.writeSync(bytes.subarray(off));
      } catch (err) {
        return Promise.reject(err);
      }
      return Promise.resolve();
    }
    const writer = this.#writer!;
    const p = this.#chain.then(() => writer.write(bytes));
    // The caller receives `p` and its failure; the ordering chain only needs
    // to know that this write is over, so it continues either way.
    this.#chain = p.then(() => undefined, () => undefined);
    return p;
  }

  async close(): Promise<void> {
    if (this.#sync !== null) return this.#sync.close();
    await this.#chain;
    await this.#writer!.close();
  }
}
