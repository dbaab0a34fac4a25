/**
 * The application shell: asks `GET /api/session` on start and shows the
 * LoginPage when there is no session (401), otherwise the workspace with a
 * logout button. Any later 401 (logout elsewhere, token rotation) returns to
 * the login page. Screens are added by the UI issue.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { createApiClient } from "./api.ts";
import { LoginPage } from "./LoginPage.ts";

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

  if (phase === "loading") return html`<main class="shell" aria-busy="true"></main>`;
  if (phase === "error") {
    return html`
      <main class="shell" role="alert">Cannot reach the server. Reload to try again.</main>
    `;
  }
  if (phase === "login") {
    return html`<${LoginPage} client=${client} onLoggedIn=${() => setPhase("ready")} />`;
  }
  return html`
    <main class="shell" data-testid="shell">
      <header class="shell-header">
        <h1>Agent Builder</h1>
        <button type="button" data-testid="logout" aria-label="Log out" onClick=${logout}>
          Log out
        </button>
      </header>
      <p>Local-first agent runtime.</p>
    </main>
  `;
}
