/**
 * Bounded splitting of a byte stream into newline-terminated lines: the one
 * splitter behind the Worker IPC reader (`protocol/ipc.ts`), the Ollama
 * NDJSON reader (`model/ollama_client.ts`), the ACP JSON-RPC reader
 * (`acp/jsonrpc.ts`) and the MCP client's SSE reader (`extensions/mcp_client.ts`).
 *
 * It enforces one bound, the length of a line without its newline: a line
 * (complete or still pending) longer than `maxLineBytes` throws
 * `LineTooLongError` before more of it is kept. Parts of a line are kept in
 * a list and joined once, when the line completes, so a line arriving in many
 * small chunks costs linear time. What a reader does with empty lines, a trailing
 * `\r`, an unterminated last line and its other bounds is the reader's rule.
 */
import { concatBytes } from "./bytes.ts";

const NL = 0x0a;

/** A line passed the splitter's length bound. */
export class LineTooLongError extends Error {
  constructor() {
    super("line too long");
    this.name = "LineTooLongError";
  }
}

export class LineSplitter {
  readonly #maxLineBytes: number;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;

  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /** Bytes of the line not yet terminated. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** The lines this chunk completes (without their newline), in order. */
  push(chunk: Uint8Array): Uint8Array[] {
    const lines: Uint8Array[] = [];
    let from = 0;
    for (;;) {
      const i = chunk.indexOf(NL, from);
      if (i < 0) break;
      this.#keep(chunk.subarray(from, i));
      lines.push(this.#take());
      from = i + 1;
    }
    // The unterminated tail is copied: the caller may reuse its chunk.
    if (from < chunk.length) this.#keep(chunk.slice(from));
    return lines;
  }

  /** The unterminated last line at the end of the stream, or null if there is none. */
  finish(): Uint8Array | null {
    return this.#pendingBytes > 0 ? this.#take() : null;
  }

  #keep(part: Uint8Array): void {
    this.#pendingBytes += part.length;
    if (this.#pendingBytes > this.#maxLineBytes) throw new LineTooLongError();
    if (part.length > 0) this.#pending.push(part);
  }

  #take(): Uint8Array {
    const parts = this.#pending;
    const n = this.#pendingBytes;
    this.#pending = [];
    this.#pendingBytes = 0;
    return concatBytes(parts, n);
  }
}
