/**
 * Structured server log [GW-6]: JSON lines with an event name and allowlisted
 * fields, buffered and flushed in batches, rotated at 5 MiB with 3 backups.
 *
 * SECURITY: callers pass only fixed event names, codes, ids and numbers —
 * never tokens, user text, model text or request bodies. Strings are clipped.
 */
import {
  LOG_BUFFER_MAX_BYTES,
  LOG_FIELD_MAX_CHARS,
  LOG_FLUSH_INTERVAL_MS,
  LOG_ROTATE_BACKUPS,
  LOG_ROTATE_BYTES,
} from "./limits.ts";

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  flush(): void;
  close(): void;
}

export interface FileLoggerOptions {
  /** Absolute path of the active log file; backups are `path.1` … `path.N`. */
  path: string;
  /** Rotation size. @default LOG_ROTATE_BYTES */
  rotateBytes?: number;
  /** Backups kept. @default LOG_ROTATE_BACKUPS */
  backups?: number;
  /** Also echo lines to stderr. @default false */
  echo?: boolean;
}

/** A logger that appends batched JSON lines to a rotating private file. */
export function createFileLogger(opts: FileLoggerOptions): Logger {
  const rotateBytes = opts.rotateBytes ?? LOG_ROTATE_BYTES;
  const backups = opts.backups ?? LOG_ROTATE_BACKUPS;
  const enc = new TextEncoder();
  let pending: string[] = [];
  let pendingBytes = 0;
  let size = 0;
  try {
    size = Deno.statSync(opts.path).size;
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  let closed = false;
  const timer = setInterval(() => flush(), LOG_FLUSH_INTERVAL_MS);
  Deno.unrefTimer(timer);

  function rotate(): void {
    for (let i = backups - 1; i >= 1; i--) {
      try {
        Deno.renameSync(`${opts.path}.${i}`, `${opts.path}.${i + 1}`);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    try {
      Deno.renameSync(opts.path, `${opts.path}.1`);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    size = 0;
  }

  function flush(): void {
    if (pending.length === 0) return;
    const data = enc.encode(pending.join(""));
    pending = [];
    pendingBytes = 0;
    if (size > 0 && size + data.length > rotateBytes) rotate();
    const f = Deno.openSync(opts.path, { append: true, create: true, mode: 0o600 });
    try {
      let off = 0;
      while (off < data.length) off += f.writeSync(data.subarray(off));
    } finally {
      f.close();
    }
    size += data.length;
  }

  function write(level: string, event: string, fields?: LogFields): void {
    if (closed) return;
    const rec: Record<string, unknown> = { ts: new Date().toISOString(), level, event };
    for (const [k, v] of Object.entries(fields ?? {})) {
      if (v === undefined) continue;
      rec[k] = typeof v === "string" ? v.slice(0, LOG_FIELD_MAX_CHARS) : v;
    }
    const line = JSON.stringify(rec) + "\n";
    if (opts.echo) Deno.stderr.writeSync(enc.encode(line));
    pending.push(line);
    pendingBytes += line.length;
    if (pendingBytes >= LOG_BUFFER_MAX_BYTES || level === "error") flush();
  }

  return {
    info: (e, f) => write("info", e, f),
    warn: (e, f) => write("warn", e, f),
    error: (e, f) => write("error", e, f),
    flush,
    close() {
      flush();
      closed = true;
      clearInterval(timer);
    },
  };
}

/** A logger that drops everything (for unit tests of pure services). */
export const silentLogger: Logger = {
  info() {},
  warn() {},
  error() {},
  flush() {},
  close() {},
};

/** The one way a log line names an error: its class name, else the value's type (never text). */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
