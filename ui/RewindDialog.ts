/**
 * The rewind dialog [TL-11]: the plan of "Rewind to here" — every file the
 * Turn and the later ones changed, which revert and which are left alone
 * (changed since, checkpoint expired or too large) — then, confirmed, what
 * was done; the workspace moves to the new branch before the Turn.
 */
import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import { planLine } from "./lib/branching.ts";
import type { RewindDialogState } from "./lib/use_history_actions.ts";

export interface RewindDialogProps {
  state: RewindDialogState;
  onConfirm(): void;
  onClose(): void;
}

export function RewindDialog({ state, onConfirm, onClose }: RewindDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  const shown = state.done ?? state.plan;
  const files = shown?.files ?? [];
  const reverting = files.filter((f) => f.status === "revert").length;
  return html`
    <dialog ref=${ref} class="dialog rewind-dialog" aria-labelledby="rewind-title"
      data-testid="rewind-dialog" onClose=${onClose} onCancel=${onClose}>
      <div class="dialog-body">
        <h2 id="rewind-title" class="dialog-title">${state.done ? "Rewound" : "Rewind to here"}</h2>
        <p class="dialog-message">
          ${state.done
            ? "The conversation continues on a new branch before this message; the original stays as the other branch."
            : "Undo what this message and every later one changed in the workspace, and continue on a new branch before it. The original conversation stays."}
        </p>
        ${shown === null && html`<p class="muted" role="status">Reading the plan…</p>`}
        ${shown && files.length === 0 &&
          html`<p class="muted" data-testid="rewind-empty">No file was changed by these turns.</p>`}
        ${files.length > 0 && html`
          <ul class="rewind-files" data-testid="rewind-files">
            ${files.map((f) =>
              html`
                <li key=${f.path} class=${`rewind-file rewind-${f.status}`} data-status=${f.status}
                  data-testid="rewind-file">
                  <code class="rewind-path">${f.path}</code>
                  <span class="rewind-what">${state.done
                    ? f.reverted ? (f.action === "delete" ? "deleted" : "restored") : planLine(f)
                    : planLine(f)}</span>
                </li>
              `
            )}
          </ul>
        `}
        <div class="dialog-actions">
          <button type="button" class="btn btn-ghost" data-testid="rewind-close" onClick=${onClose}>
            ${state.done ? "Close" : "Cancel"}</button>
          ${!state.done && html`
            <button type="button" class="btn btn-danger" data-testid="rewind-confirm"
              disabled=${state.busy || shown === null} onClick=${onConfirm}>
              ${reverting > 0
                ? `Rewind (${reverting} file${reverting === 1 ? "" : "s"})`
                : "Rewind"}
            </button>
          `}
        </div>
      </div>
    </dialog>
  `;
}
