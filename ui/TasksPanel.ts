/**
 * The Tasks panel [UI-11, EX-6]: one Agent's background Tasks — the active
 * ones first, then the recent ones — each with its status, elapsed time, the
 * command, the tail of its output (and how many earlier bytes are not shown),
 * its change set's size, a Cancel button while it runs, and a link to the
 * timeline of the Run that started it. Live: the list is read again every
 * second while a Task runs (every 5 s otherwise) as long as the panel is open
 * — Tasks have no event stream; their output is a spool on the server. All
 * command and output text is rendered as text nodes, never HTML. Shown in a
 * native modal <dialog>; child Runs of subagents [LC-2] get their own section
 * below the Tasks (see the marked slot).
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Requester } from "./lib/endpoints.ts";
import { TaskListResponse, type TaskViewSchema } from "../runtime/protocol/api.ts";
import { fmtDuration, fmtRelative } from "./lib/format.ts";
import { parse } from "./lib/types.ts";
import { ChildRunList } from "./ChildRunList.ts";
import type { z } from "zod";

type TaskView = z.infer<typeof TaskViewSchema>;

export interface TasksPanelProps {
  request: Requester;
  agent: { id: string; name: string };
  /** Opens the starting Run's Conversation with that Run's timeline (Run details). */
  onOpenRun(conversationId: string, runId: string): void;
  onClose(): void;
}

/** How often the open panel reads the list again: while a Task runs, and otherwise. */
export const TASKS_POLL_ACTIVE_MS = 1000;
export const TASKS_POLL_IDLE_MS = 5000;

function code(err: unknown): string {
  const c = (err as { code?: unknown })?.code;
  return typeof c === "string" ? c : "unknown_error";
}

const STATUS_TEXT: Record<TaskView["status"], string> = {
  running: "running",
  exited: "finished",
  signaled: "killed by a signal",
  timeout: "timed out",
  cancelled: "cancelled",
  interrupted: "interrupted (server restart)",
  outcome_unknown: "outcome unknown",
  failed: "failed",
};

function statusClass(t: TaskView): string {
  if (t.status === "running") return "state-chat_only";
  if (t.status === "exited" && t.exit_code === 0) return "state-ready";
  return "state-unavailable";
}

function outcomeLine(t: TaskView): string {
  if (t.status === "exited") return `exit code ${t.exit_code}`;
  if (t.status === "signaled") return `signal ${t.signal ?? "?"}`;
  if (t.status === "failed") return t.error_code ?? "failed";
  return "";
}

function shown(argv: string[]): string {
  return argv.map((a) => /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : JSON.stringify(a)).join(" ");
}

function TaskRow(
  { t, now, busy, onCancel, onOpenRun }: {
    t: TaskView;
    now: number;
    busy: boolean;
    onCancel(): void;
    onOpenRun(): void;
  },
) {
  const elapsed = t.status === "running"
    ? Math.max(t.elapsed_ms, now - t.created_at)
    : t.elapsed_ms;
  const cs = t.change_set;
  return html`
    <section class="task" data-testid="task" data-task=${t.task_id} data-status=${t.status}>
      <div class="models-head">
        <div class="task-title">
          <code class="task-argv" data-testid="task-argv">$ ${shown(t.argv)}</code>
          <div class="muted small">
            <span class=${`state ${
              statusClass(t)
            }`} data-testid="task-status">${STATUS_TEXT[t.status]}</span>
            ${" "}<span data-testid="task-elapsed">${fmtDuration(elapsed)}</span>
            ${outcomeLine(t) &&
              html`${" "}· <span data-testid="task-outcome">${outcomeLine(t)}</span>`}
            ${t.cwd !== "." && html`${" "}· in <code>${t.cwd}</code>`}
            ${" "}· started ${fmtRelative(t.created_at, now)}
          </div>
        </div>
        <div class="task-actions">
          ${t.conversation_id && html`
            <button type="button" class="btn btn-sm btn-ghost" data-testid="task-open-run"
              onClick=${onOpenRun}>Open run</button>
          `}
          ${t.status === "running" && html`
            <button type="button" class="btn btn-sm btn-danger" data-testid="task-cancel"
              disabled=${busy} onClick=${onCancel}>Cancel</button>
          `}
        </div>
      </div>
      ${t.output_tail_earlier_bytes > 0 && html`
        <p class="muted small" data-testid="task-omitted">
          ${t.output_tail_earlier_bytes.toLocaleString(
            "en",
          )} earlier bytes not shown${t.output_omitted_bytes > 0
            ? ` (the spool keeps the last 1 MiB; ${
              t.output_omitted_bytes.toLocaleString("en")
            } bytes dropped)`
            : ""}.</p>
      `}
      ${t.output_tail !== "" || t.status === "running"
        ? html`
          <pre class="task-output" data-testid="task-output" tabindex="0"
            aria-label="Output (latest)">${t.output_tail || "(no output yet)"}</pre>
        `
        : html`<p class="muted small">No output.</p>`}
      ${cs && cs.total > 0 && html`
        <p class="small" data-testid="task-changes">
          ${cs.total} changed path${cs.total === 1 ? "" : "s"}${cs.truncated ? " (truncated)" : ""}:
          ${" "}${cs.entries.slice(0, 8).map((e) => `${e.kind[0].toUpperCase()} ${e.path}`).join(
            ", ",
          )}
          ${cs.entries.length > 8 ? " …" : ""}${" "}${t.applicable
            ? html`— the model can apply them with <code>exec/apply</code>.`
            : "— no longer kept for applying."}
        </p>
      `}
    </section>
  `;
}

export function TasksPanel({ request, agent, onOpenRun, onClose }: TasksPanelProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [tasks, setTasks] = useState<TaskView[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  const base = `/api/agents/${encodeURIComponent(agent.id)}/tasks`;

  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);

  const load = useCallback(async () => {
    try {
      const r = parse(TaskListResponse, await request("GET", base), "tasks");
      setTasks(r.tasks);
      setNow(Date.now());
      setError(null);
    } catch (err) {
      setError(code(err));
    }
  }, [request, base]);
  useEffect(() => void load(), [load]);

  const running = (tasks ?? []).some((t) => t.status === "running");
  useEffect(() => {
    if (tasks === null) return;
    const t = setTimeout(() => void load(), running ? TASKS_POLL_ACTIVE_MS : TASKS_POLL_IDLE_MS);
    return () => clearTimeout(t);
  }, [tasks, running, load]);

  const cancel = async (id: string) => {
    setBusy(id);
    try {
      await request("POST", `${base}/${encodeURIComponent(id)}/cancel`);
    } catch (err) {
      // A Task that ended meanwhile needs no cancelling.
      if (code(err) !== "task_not_active") setError(code(err));
    } finally {
      setBusy(null);
      await load();
    }
  };

  const active = (tasks ?? []).filter((t) => t.status === "running");
  const recent = (tasks ?? []).filter((t) => t.status !== "running");
  const row = (t: TaskView) =>
    html`
      <${TaskRow} key=${t.task_id} t=${t} now=${now} busy=${busy === t.task_id}
        onCancel=${() => cancel(t.task_id)}
        onOpenRun=${() => t.conversation_id && onOpenRun(t.conversation_id, t.run_id)} />
    `;

  return html`
    <dialog ref=${ref} class="dialog dialog-wide" aria-labelledby="tasks-title"
      data-testid="tasks-panel" onClose=${onClose} onCancel=${onClose}>
      <div class="dialog-body">
        <div class="models-head">
          <h2 id="tasks-title" class="dialog-title">Tasks of ${agent.name}</h2>
        </div>
        <p class="muted small">Background commands (<code>exec/command</code> with${" "}
          <code>background</code>) run on their own copy of the workspace and go on after the
          answer: at most 2 at a time per agent, 30 minutes each.</p>
        ${error && html`<p class="models-error" role="alert" data-testid="tasks-error">
          <code class="pill">${error}</code></p>`}
        <h3 class="tasks-heading">Active <span class="muted small" data-testid="tasks-active-count">${active
          .length} / 2</span></h3>
        ${tasks !== null && active.length === 0 &&
          html`<p class="muted small" data-testid="tasks-none-active">No task is running.</p>`}
        ${active.map(row)}
        <h3 class="tasks-heading">Recent</h3>
        ${tasks !== null && recent.length === 0 &&
          html`<p class="muted small" data-testid="tasks-none-recent">No finished task.</p>`}
        ${recent.map(row)}
        <${ChildRunList} request=${request} agent=${agent} onOpenRun=${onOpenRun} onClose=${onClose} />
        <div class="dialog-actions">
          <button type="button" class="btn" data-testid="tasks-close" onClick=${onClose}>Close</button>
        </div>
      </div>
    </dialog>
  `;
}
