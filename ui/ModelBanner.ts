/**
 * Shown when the model is unavailable [UI-5, MB-2]: the reason code from
 * /health and how the operator connects Ollama. Runs fail closed meanwhile.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { Icon } from "./Icon.ts";
import type { Requester } from "./lib/endpoints.ts";
import { ModelEndpointResponse } from "../runtime/protocol/api.ts";

export interface ModelBannerProps {
  reason: string | null;
  onRecheck(): void;
  /** Reads the configured `--ollama` URL (GET /api/models/endpoint). */
  request?: Requester;
}

export function ModelBanner({ reason, onRecheck, request }: ModelBannerProps) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    request?.("GET", "/api/models/endpoint").then(
      (r) => {
        const p = ModelEndpointResponse.safeParse(r);
        setUrl(p.success ? p.data.url : null);
      },
      () => setUrl(null),
    );
  }, [request]);
  return html`
    <div class="banner banner-warn" role="status" data-testid="model-banner">
      <${Icon} name="warn" />
      <div class="banner-text">
        <strong>Model unavailable</strong>${reason
          ? html`${" "}<code class="pill">${reason}</code>`
          : ""}
        <span class="banner-help">Runs fail until Ollama is reachable. Start it with${" "}<code
          >ollama serve</code>; this server looks for it at${" "}<code data-testid="model-banner-url"
          >${url ??
            "the --ollama URL it was started with"}</code>. To use another, restart with${" "}<code
          >agent-builder serve --ollama http://HOST:11434</code>.</span>
      </div>
      <button type="button" class="btn btn-sm" onClick=${onRecheck}>Check again</button>
    </div>
  `;
}
