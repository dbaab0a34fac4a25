/** A dismissible error line with the fixed code and a plain explanation [UI-6]. */
import { html } from "htm/preact";
import { Icon } from "./Icon.ts";

export interface ErrorToastProps {
  message: string;
  code: string | null;
  onDismiss(): void;
}

export function ErrorToast({ message, code, onDismiss }: ErrorToastProps) {
  return html`
    <div class="toast" role="alert" data-testid="error-toast">
      <${Icon} name="warn" />
      <span>${message}${code
        ? html`
          <code class="pill">${code}</code>
        `
        : ""}</span>
      <button type="button" class="icon-btn" aria-label="Dismiss error" onClick=${onDismiss}>
        <${Icon} name="close" />
      </button>
    </div>
  `;
}
