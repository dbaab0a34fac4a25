/**
 * The application shell: asks `GET /api/session` on start and shows the
 * LoginPage when there is no session (401), otherwise the Workspace. Any later
 * 401 (logout elsewhere, token rotation) returns to the login page [UI-6].
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { createApiClient } from "./api.ts";
import { LoginPage } from "./LoginPage.ts";
import { Workspace } from "./Workspace.ts";

type Phase = "loading" | "login" | "ready" | "error";

export function App() {
  const [phase, setPhase] = useState<Phase>("loading");
  const client = useMemo(() => createApiClient({ onUnauthorized: () => setPhase("login") }), []);

  useEffect(() => {
    client.loadSession().then(
      (s) => setPhase(s === null ? "login" : "ready"),
      () => setPhase("error"),
    );
  }, [client]);

  const logout = () => {
    client.logout().then(() => setPhase("login"), () => setPhase("error"));
  };

  if (phase === "loading") return html`<main class="shell shell-loading" aria-busy="true"></main>`;
  if (phase === "error") {
    return html`
      <main class="shell shell-error" role="alert">
        <h1>Cannot reach the server</h1>
        <p>Check that <code>agent-builder serve</code> is running, then reload this page.</p>
      </main>
    `;
  }
  if (phase === "login") {
    return html`<${LoginPage} client=${client} onLoggedIn=${() => setPhase("ready")} />`;
  }
  return html`
    <div class="shell-app" data-testid="shell">
      <${Workspace} request=${client.request} onLogout=${logout} csrf=${() => client.csrf()} />
    </div>
  `;
}
