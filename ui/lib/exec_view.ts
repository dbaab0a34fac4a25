/**
 * Pure helpers of the command card and the change-set view [UI-10, EX-4]:
 * the argv as one display line (quoted for reading, never run), the parsed
 * model result of exec/command and exec/apply, and the URLs of the
 * change-set reads. Logic only, no DOM, so it is unit-testable.
 */

/** Quotes one argv item for display the way a POSIX shell would read it back. */
export function quoteArg(a: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`;
}

export function argvLine(argv: unknown): string {
  return Array.isArray(argv) ? argv.map((a) => quoteArg(String(a))).join(" ") : "";
}

export interface CommandSummary {
  outcome: string;
  exitCode: number | null;
  signal: string | null;
  durationMs: number | null;
  stdout: string;
  stderr: string;
  changes: number;
}

/** The exec/command result the model saw (the canonical ≤ 4 KiB JSON), or null. */
export function parseCommandResult(result: string | null): CommandSummary | null {
  if (!result) return null;
  let o: Record<string, unknown>;
  try {
    const v = JSON.parse(result);
    if (v === null || typeof v !== "object") return null;
    o = v as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof o.outcome !== "string") return null;
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v) ? v : null;
  const changes = o.changes as Record<string, unknown> | undefined;
  return {
    outcome: o.outcome,
    exitCode: num(o.exit_code),
    signal: typeof o.signal === "string" ? o.signal : null,
    durationMs: num(o.duration_ms),
    stdout: typeof o.stdout === "string" ? o.stdout : "",
    stderr: typeof o.stderr === "string" ? o.stderr : "",
    changes: num(changes?.total) ?? 0,
  };
}

/** "exit 1 · 1.2 s", "SIGKILL · 60.0 s", "timeout · 60.0 s". */
export function exitLine(c: CommandSummary): string {
  const what = c.outcome === "exited"
    ? `exit ${c.exitCode ?? "?"}`
    : c.outcome === "signaled"
    ? (c.signal ?? "signal")
    : c.outcome.replaceAll("_", " ");
  const d = c.durationMs === null
    ? ""
    : ` · ${c.durationMs < 1000 ? `${c.durationMs} ms` : `${(c.durationMs / 1000).toFixed(1)} s`}`;
  return what + d;
}

export function changesUrl(agentId: string, runId: string, callId: string | null): string {
  const q = callId ? `?call_id=${encodeURIComponent(callId)}` : "";
  return `/api/agents/${encodeURIComponent(agentId)}/runs/${encodeURIComponent(runId)}/changes${q}`;
}

export function diffUrl(agentId: string, runId: string, callId: string, path: string): string {
  return `${changesUrl(agentId, runId, null)}/diff?call_id=${encodeURIComponent(callId)}&path=${
    encodeURIComponent(path)
  }`;
}

export interface ChangeEntryView {
  path: string;
  kind: "added" | "modified" | "deleted";
  old_size: number | null;
  new_size: number | null;
  binary: boolean;
  diff_bytes: number;
  note: string | null;
  applied: string | null;
}

const SIGN = { added: "A", modified: "M", deleted: "D" } as const;

export function entrySign(e: ChangeEntryView): string {
  return SIGN[e.kind] ?? "?";
}

/** "12 B → 14 B", "new, 11 B", "deleted, 4 B". */
export function sizeLine(e: ChangeEntryView): string {
  const b = (n: number | null) =>
    n === null ? "?" : n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
  if (e.kind === "added") return `new, ${b(e.new_size)}`;
  if (e.kind === "deleted") return `deleted, ${b(e.old_size)}`;
  return `${b(e.old_size)} → ${b(e.new_size)}`;
}
