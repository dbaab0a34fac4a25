/**
 * A command's change set as a file list with diffs [UI-10, EX-4]: each path
 * with its kind, sizes, notes and what exec/apply did with it; a path opens
 * to its full unified diff (read on demand from `…/changes/diff`). Used in
 * the command card and in the exec/apply approval, which so shows the whole
 * change set. Everything is text.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { DiffText } from "./DiffText.ts";
import { type ChangeEntryView, changesUrl, diffUrl, entrySign, sizeLine } from "./lib/exec_view.ts";

export interface ChangeSetViewProps {
  agentId: string;
  runId: string;
  /** The command's call id; null = the Run's latest change set. */
  callId: string | null;
  /** Re-read when this changes (e.g. after an apply completed). */
  version?: string;
}

/** Per-Run revision of what exec/apply did, so every view of that Run's change sets re-reads. */
const applied = new Map<string, number>();
const listeners = new Set<() => void>();

/** Called when an exec/apply of `runId` finished: its change-set views re-read. */
export function changeSetApplied(runId: string): void {
  applied.set(runId, (applied.get(runId) ?? 0) + 1);
  if (applied.size > 256) applied.delete(applied.keys().next().value!);
  for (const fn of listeners) fn();
}

function useAppliedRevision(runId: string): number {
  const [rev, setRev] = useState(applied.get(runId) ?? 0);
  useEffect(() => {
    const fn = () => setRev(applied.get(runId) ?? 0);
    listeners.add(fn);
    fn();
    return () => {
      listeners.delete(fn);
    };
  }, [runId]);
  return rev;
}

interface Loaded {
  callId: string;
  total: number;
  truncated: boolean;
  entries: ChangeEntryView[];
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, {
    credentials: "same-origin",
    headers: { accept: "application/json" },
    cache: "no-store",
  });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const code = (body as { error?: { code?: string } } | null)?.error?.code;
    throw new Error(code ?? `http_${res.status}`);
  }
  return body;
}

function FileDiff(p: { agentId: string; runId: string; callId: string; e: ChangeEntryView }) {
  const [open, setOpen] = useState(false);
  const [diff, setDiff] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!open || diff !== null || p.e.diff_bytes === 0) return;
    let alive = true;
    getJson(diffUrl(p.agentId, p.runId, p.callId, p.e.path)).then((b) => {
      if (alive) setDiff(String((b as { diff?: unknown }).diff ?? ""));
    }, (err) => alive && setError(String(err.message)));
    return () => {
      alive = false;
    };
  }, [open]);
  const e = p.e;
  const note = e.note ? e.note.replaceAll("_", " ") : e.binary ? "binary" : null;
  return html`
    <li class=${`change-entry change-${e.kind}`} data-testid="change-entry" data-path=${e.path}>
      <details onToggle=${(ev: Event) => setOpen((ev.target as HTMLDetailsElement).open)}>
        <summary>
          <span class="change-sign" aria-label=${e.kind}>${entrySign(e)}</span>${" "}
          <span class="change-path">${e.path}</span>${" "}
          <span class="change-size">${sizeLine(e)}</span>${note && " "}
          ${note && html`
            <span class="change-note">${note}</span>
          `}
          ${e.applied && " "}${e.applied && html`
            <span class=${`change-applied ${
              e.applied === "applied" ? "ok" : "refused"
            }`} data-testid="change-applied">${e.applied === "applied"
              ? "applied"
              : `refused: ${e.applied}`}</span>
          `}
        </summary>
        ${e.diff_bytes === 0
          ? html`<p class="change-nodiff">${
            note ? `No text diff (${note}); applied by digest.` : "No text diff."
          }</p>`
          : error
          ? html`<p class="change-nodiff">Diff unavailable (${error}).</p>`
          : diff === null
          ? html`<p class="change-nodiff">Loading…</p>`
          : html`<${DiffText} text=${diff} testId="change-diff" />`}
      </details>
    </li>
  `;
}

export function ChangeSetView(p: ChangeSetViewProps) {
  const [data, setData] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const rev = useAppliedRevision(p.runId);
  useEffect(() => {
    let alive = true;
    getJson(changesUrl(p.agentId, p.runId, p.callId)).then((b) => {
      if (!alive) return;
      const o = b as { call_id: string; change_set: Loaded & { entries: ChangeEntryView[] } };
      setData({
        callId: o.call_id,
        total: o.change_set.total,
        truncated: o.change_set.truncated,
        entries: o.change_set.entries,
      });
      setError(null);
    }, (err) => alive && setError(String(err.message)));
    return () => {
      alive = false;
    };
  }, [p.agentId, p.runId, p.callId, p.version, rev]);
  if (error) {
    return html`<p class="change-nodiff" data-testid="change-set-error">${
      error === "change_set_not_found" ? "No change set." : `Change set unavailable (${error}).`
    }</p>`;
  }
  if (data === null) return html`<p class="change-nodiff">Loading the change set…</p>`;
  if (data.entries.length === 0) {
    return html`<p class="change-nodiff" data-testid="change-set-empty">No files changed.</p>`;
  }
  return html`
    <div class="change-set" data-testid="change-set">
      <ul class="change-list">
        ${data.entries.map((e) =>
          html`
            <${FileDiff} key=${e.path} agentId=${p.agentId} runId=${p.runId}
              callId=${data.callId} e=${e} />
          `
        )}
      </ul>
      ${data.truncated &&
        html`<p class="change-nodiff">Showing ${data.entries.length} of ${data.total} changed paths.</p>`}
    </div>
  `;
}
