/**
 * Shown when the model is unavailable [UI-5, MB-2]: the reason code from
 * /health and how the operator connects Ollama. Runs fail closed meanwhile.
 */
import { html } from "htm/preact";
import { Icon } from "./Icon.ts";

export interface ModelBannerProps {
  reason: string | null;
  onRecheck(): void;
}

export function ModelBanner({ reason, onRecheck }: ModelBannerProps) {
  return html`
    <div class="banner banner-warn" role="status" data-testid="model-banner">
      <${Icon} name="warn" />
      <div class="banner-text">
        <strong>Model unavailable</strong>${reason
          ? html`${" "}<code class="pill">${reason}</code>`
          : ""}
        <span class="banner-help">Runs fail until Ollama is reachable. Start it with${" "}<code
          >ollama serve</code>${" "}(the server looks for it at the${" "}<code>--ollama</code>${" "}URL it
          was started with, by default${" "}<code>http://127.0.0.1:11434</code>), or restart the server
          with${" "}<code>agent-builder serve --ollama http://HOST:11434</code>.</span>
      </div>
      <button type="button" class="btn btn-sm" onClick=${onRecheck}>Check again</button>
    </div>
  `;
}
