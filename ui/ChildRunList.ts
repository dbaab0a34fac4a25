/**
 * Child Runs of subagents in the Tasks panel [UI-11, LC-2]: the delegations
 * this Agent made as a parent (`GET …/delegations`), newest first — the
 * delegate Agent, status, elapsed time, the message and the tail of the
 * answer, Cancel while the child runs (the child Agent's own cancel route),
 * and links to the child's Conversation and to the parent Run's timeline.
 * Read again every second while a child runs (every 5 s otherwise) while the
 * panel is open. All text is rendered as text nodes.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import type { Requester } from "./lib/endpoints.ts";
import { type DelegationJson, DelegationsResponse } from "../runtime/protocol/api.ts";
import { fmtDuration, fmtRelative } from "./lib/format.ts";
import { formatPlace } from "./lib/route.ts";
import { parse } from "./lib/types.ts";

export interface ChildRunListProps {
  request: Requester;
  agent: { id: string; name: string };
  /** Opens the parent Run's Conversation with its timeline. */
  onOpenRun(conversationId: string, runId: string): void;
  /** Closes the panel (opening the child's Conversation leaves it). */
  onClose?(): void;
}

export const CHILD_RUNS_POLL_ACTIVE_MS = 1000;
export const CHILD_RUNS_POLL_IDLE_MS = 5000;
/** Characters of the answer shown in a row (its tail). */
const ANSWER_TAIL_CHARS = 400;

const STATE_TEXT: Record<DelegationJson["state"], string> = {
  running: "running",
  completed: "answered",
  failed: "failed",
  cancelled: "cancelled",
  timeout: "timed out (45 s)",
  interrupted: "interrupted (server restart)",
};

function code(err: unknown): string {
  const c = (err as { code?: unknown })?.code;
  return typeof c === "string" ? c : "unknown_error";
}

function tail(s: string): string {
  return s.length > ANSWER_TAIL_CHARS ? `… ${s.slice(-ANSWER_TAIL_CHARS)}` : s;
}

function ChildRow(
  { d, now, busy, onCancel, onOpenRun, onLeave }: {
    d: DelegationJson;
    now: number;
    busy: boolean;
    onCancel(): void;
    onOpenRun(): void;
    onLeave?(): void;
  },
) {
  const elapsed = (d.finished_at ?? now) - d.created_at;
  const message = d.mailbox.find((m) => m.direction === "parent_to_child");
  const answer = d.mailbox.find((m) => m.direction === "child_to_parent");
  const cls = d.state === "running"
    ? "state-chat_only"
    : d.state === "completed"
    ? "state-ready"
    : "state-unavailable";
  return html`
    <section class="task" data-testid="child-run" data-state=${d.state}>
      <div class="models-head">
        <div class="task-title">
          <strong data-testid="child-run-agent">${d.child_agent_name ?? "(deleted Agent)"}</strong>
          <div class="muted small">
            <span class=${`state ${cls}`} data-testid="child-run-status">${STATE_TEXT[
              d.state
            ]}</span>
            ${" "}<span data-testid="child-run-elapsed">${fmtDuration(Math.max(0, elapsed))}</span>
            ${d.code && d.state !== "completed" && html`${" "}· <code>${d.code}</code>`}
            ${" "}· started ${fmtRelative(d.created_at, now)}
          </div>
        </div>
        <div class="task-actions">
          ${d.child_agent_name !== null && html`
            <a class="btn btn-sm btn-ghost" data-testid="child-run-open" onClick=${onLeave}
              href=${formatPlace({
                agentId: d.child_agent_id,
                conversationId: d.child_conversation_id,
              })}>
              Open conversation</a>
          `}
          <button type="button" class="btn btn-sm btn-ghost" data-testid="child-run-parent"
            onClick=${onOpenRun}>Open parent run</button>
          ${d.state === "running" && d.child_run_id && html`
            <button type="button" class="btn btn-sm btn-danger" data-testid="child-run-cancel"
              disabled=${busy} onClick=${onCancel}>Cancel</button>
          `}
        </div>
      </div>
      ${message && html`<p class="small" data-testid="child-run-message">
        <span class="muted">Asked:</span> ${tail(message.body)}</p>`}
      ${answer && html`
        <pre class="task-output" data-testid="child-run-answer" tabindex="0"
          aria-label="Answer (latest)">${tail(answer.body)}${answer.truncated
            ? "\n[cut at 8 KiB]"
            : ""}</pre>
      `}
    </section>
  `;
}

export function ChildRunList({ request, agent, onOpenRun, onClose }: ChildRunListProps) {
  const [rows, setRows] = useState<DelegationJson[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  const path = `/api/agents/${encodeURIComponent(agent.id)}/delegations`;

  const load = useCallback(async () => {
    try {
      setRows(parse(DelegationsResponse, await request("GET", path), "delegations").delegations);
      setNow(Date.now());
      setError(null);
    } catch (err) {
      setError(code(err));
    }
  }, [request, path]);
  useEffect(() => void load(), [load]);

  const running = (rows ?? []).some((d) => d.state === "running");
  useEffect(() => {
    if (rows === null) return;
    const t = setTimeout(
      () => void load(),
      running ? CHILD_RUNS_POLL_ACTIVE_MS : CHILD_RUNS_POLL_IDLE_MS,
    );
    return () => clearTimeout(t);
  }, [rows, running, load]);

  const cancel = async (d: DelegationJson) => {
    if (!d.child_run_id) return;
    setBusy(d.id);
    try {
      await request(
        "POST",
        `/api/agents/${encodeURIComponent(d.child_agent_id)}/runs/${
          encodeURIComponent(d.child_run_id)
        }/cancel`,
      );
    } catch (err) {
      // A child that ended meanwhile needs no cancelling.
      if (code(err) !== "run_not_active") setError(code(err));
    } finally {
      setBusy(null);
      await load();
    }
  };

  return html`
    <div data-testid="child-runs">
      <h3 class="tasks-heading">Subagents <span class="muted small">child runs this agent
        delegated (agent/delegate)</span></h3>
      ${error && html`<p class="models-error" role="alert" data-testid="child-runs-error">
        <code class="pill">${error}</code></p>`}
      ${rows !== null && rows.length === 0 &&
        html`<p class="muted small" data-testid="child-runs-none">No delegation yet.</p>`}
      ${(rows ?? []).map((d) =>
        html`
          <${ChildRow} key=${d.id} d=${d} now=${now} busy=${busy === d.id}
            onCancel=${() => cancel(d)} onLeave=${onClose}
            onOpenRun=${() => onOpenRun(d.parent_conversation_id, d.parent_run_id)} />
        `
      )}
    </div>
  `;
}
