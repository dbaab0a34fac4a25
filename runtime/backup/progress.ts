/**
 * Progress lines for long backups and restores on a terminal [OP-1]. Pure
 * apart from the injected `write`: the CLI passes a TTY writer, tests a
 * recorder. Quiet below BACKUP_PROGRESS_MIN_BYTES and at most one line per
 * interval, so small operations and pipes stay clean.
 */
import { BACKUP_PROGRESS_MIN_BYTES } from "../limits.ts";

/** 1536 → "1.5 KiB"; exact bytes below 1 KiB. */
export function formatBytes(n: number): string {
  const units = ["KiB", "MiB", "GiB", "TiB"];
  if (n < 1024) return `${n} B`;
  let v = n;
  let u = -1;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

export interface ProgressLineOptions {
  /** Receives `\r`-prefixed status text and a final newline. */
  write: (text: string) => void;
  /** @default BACKUP_PROGRESS_MIN_BYTES */
  minBytes?: number;
  /** @default 250 */
  intervalMs?: number;
  /** @default Date.now */
  now?: () => number;
}

export interface ProgressLine {
  update(bytes: number, text: string): void;
  /** Ends the line if anything was printed. */
  done(): void;
}

export function createProgressLine(opts: ProgressLineOptions): ProgressLine {
  const minBytes = opts.minBytes ?? BACKUP_PROGRESS_MIN_BYTES;
  const interval = opts.intervalMs ?? 250;
  const now = opts.now ?? Date.now;
  let last = -Infinity;
  let shown = false;
  return {
    update(bytes, text) {
      if (bytes < minBytes) return;
      const t = now();
      if (t - last < interval) return;
      last = t;
      shown = true;
      opts.write(`\r${text}\u001b[K`);
    },
    done() {
      if (shown) opts.write("\n");
      shown = false;
    },
  };
}

/** A writer to stderr when it is a terminal, else null (no progress). */
export function terminalWriter(): ((text: string) => void) | null {
  if (!Deno.stderr.isTerminal()) return null;
  const enc = new TextEncoder();
  return (text) => {
    const b = enc.encode(text);
    let off = 0;
    while (off < b.length) off += Deno.stderr.writeSync(b.subarray(off));
  };
}
