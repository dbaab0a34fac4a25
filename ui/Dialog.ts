/**
 * A modal confirmation / single-field prompt on the native <dialog> (top
 * layer, focus trapped, Esc cancels). Used for every destructive or renaming
 * action in [UI-5].
 */
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { DialogRequest } from "./lib/management.ts";

export interface DialogProps {
  request: DialogRequest;
  onClose(): void;
}

export function Dialog({ request, onClose }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [value, setValue] = useState(request.field?.value ?? "");
  const [busy, setBusy] = useState(false);
  /** The inline message shown once a submit was refused (then updated while typing). */
  const [problem, setProblem] = useState<string | null>(null);
  const check = (v: string) => request.field?.validate?.(v) ?? null;
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    if (request.field) {
      const why = check(value) ?? (value.trim() === "" ? "This cannot be empty." : null);
      setProblem(why);
      if (why) return;
    }
    setBusy(true);
    try {
      await request.onConfirm(value.trim());
    } finally {
      setBusy(false);
      onClose();
    }
  };
  return html`
    <dialog ref=${ref} class="dialog" aria-labelledby="dialog-title" onClose=${onClose}
      onCancel=${onClose}>
      <form method="dialog" class="dialog-body" onSubmit=${submit}>
        <h2 id="dialog-title" class="dialog-title">${request.title}</h2>
        <p class="dialog-message">${request.message}</p>
        ${request.field && html`
          <label class="field">
            <span class="field-label">${request.field.label}</span>
            <input class="input" type="text" value=${value} autofocus data-testid="dialog-input"
              maxLength=${request.field.validate ? undefined : request.field.maxLength}
              aria-invalid=${problem ? "true" : "false"} aria-describedby="dialog-problem"
              onInput=${(e: Event) => {
                const v = (e.target as HTMLInputElement).value;
                setValue(v);
                if (problem !== null) setProblem(check(v));
              }} />
          </label>
          <p id="dialog-problem" class="field-problem" role="alert" data-testid="dialog-error">${problem ??
            ""}</p>
        `}
        <div class="dialog-actions">
          <button type="button" class="btn btn-ghost" onClick=${onClose}>Cancel</button>
          <button type="submit" class=${`btn ${request.danger ? "btn-danger" : "btn-primary"}`}
            disabled=${busy} data-testid="dialog-confirm">${request.confirmLabel}</button>
        </div>
      </form>
    </dialog>
  `;
}
