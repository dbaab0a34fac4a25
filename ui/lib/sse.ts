/**
 * A Server-Sent Events client for Run streams [EV-3]: a pure line parser plus
 * a fetch-based connection that resumes with `Last-Event-ID` and reconnects at
 * most SSE_RECONNECTS_MAX times (EventSource would retry forever and cannot
 * be bounded). The stream is considered finished once `isTerminal` says so.
 */
import { SSE_CLIENT_RECONNECTS_MAX } from "../../runtime/limits.ts";

/** The SPEC's client reconnect budget [EV-3], owned by runtime/limits.ts. */
export const SSE_RECONNECTS_MAX = SSE_CLIENT_RECONNECTS_MAX;

export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

/** Incremental SSE parser: feed decoded text chunks, get complete messages. */
export function createSseParser(): (chunk: string) => SseMessage[] {
  let buffer = "";
  let id: string | null = null;
  let event = "";
  let data: string[] = [];
  return (chunk) => {
    buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const nl = buffer.search(/\r\n|\r|\n/);
      if (nl < 0) break;
      const sep = buffer.startsWith("\r\n", nl) ? 2 : 1;
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + sep);
      if (line === "") {
        if (data.length > 0) out.push({ id, event: event || "message", data: data.join("\n") });
        event = "";
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
      else if (field === "event") event = value;
      else if (field === "id" && !value.includes("\u0000")) id = value;
    }
    return out;
  };
}

export interface StreamOptions {
  url: string;
  onMessage(msg: SseMessage): void;
  /** True once the run has reached a terminal event; no reconnect after that. */
  isTerminal(): boolean;
  /** Called when the stream gives up (after the reconnect budget) or fails hard. */
  onGiveUp(reason: string): void;
  /** Injectable for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Delay before reconnect n (1-based). */
  backoffMs?(attempt: number): number;
}

export interface StreamHandle {
  close(): void;
  /** Number of reconnects used so far. */
  reconnects(): number;
}

/** Opens the stream; resumes from the last seen id after a drop. */
export function openEventStream(opts: StreamOptions): StreamHandle {
  const doFetch = opts.fetch ?? fetch.bind(globalThis);
  const ctrl = new AbortController();
  let lastId: string | null = null;
  let attempts = 0;
  let closed = false;

  const connect = async (): Promise<void> => {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (lastId !== null) headers["last-event-id"] = lastId;
    let res: Response;
    try {
      res = await doFetch(opts.url, { headers, signal: ctrl.signal, credentials: "same-origin" });
    } catch (err) {
      if (closed) return;
      return retry(err instanceof Error ? err.name : "network");
    }
    if (!res.ok || res.body === null) {
      // 4xx means the run or session is gone: do not hammer the server.
      if (res.status >= 400 && res.status < 500) return giveUp(`http_${res.status}`);
      return retry(`http_${res.status}`);
    }
    const parse = createSseParser();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const msg of parse(value)) {
          if (msg.id !== null) lastId = msg.id;
          opts.onMessage(msg);
        }
      }
    } catch (err) {
      if (closed) return;
      return retry(err instanceof Error ? err.name : "read");
    }
    if (!closed && !opts.isTerminal()) return retry("eof");
  };

  const retry = (reason: string): Promise<void> | void => {
    if (closed || opts.isTerminal()) return;
    if (attempts >= SSE_RECONNECTS_MAX) return giveUp(reason);
    attempts++;
    const delay = opts.backoffMs ? opts.backoffMs(attempts) : 400 * attempts;
    return new Promise<void>((r) => setTimeout(r, delay)).then(() =>
      closed ? undefined : connect()
    );
  };

  const giveUp = (reason: string) => {
    if (!closed) opts.onGiveUp(reason);
  };

  void connect();
  return {
    close() {
      closed = true;
      ctrl.abort();
    },
    reconnects: () => attempts,
  };
}
