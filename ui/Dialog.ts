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
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    if (request.field && value.trim() === "") return;
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
            <input class="input" type="text" value=${value} maxLength=${request.field.maxLength}
              autofocus data-testid="dialog-input"
              onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)} />
          </label>
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
