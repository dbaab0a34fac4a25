/**
 * The login page [UI-6, GW-3, GW-7]: one password-type field for the
 * bootstrap token, clear fixed error messages (wrong token, rate limited with
 * the wait time, refused address, server unreachable), and the plain
 * statement that one token controls the whole installation.
 *
 * SECURITY: the token is only sent in the POST body; it is never put in the
 * URL (the form is `method="post"` so even a native submit cannot add it to
 * the query), stored, or logged, and the field is cleared after every attempt.
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { type ApiClient, ApiError } from "./api.ts";

export interface LoginPageProps {
  client: ApiClient;
  /** Called with the new CSRF token once the session cookie is set. */
  onLoggedIn(csrfToken: string): void;
}

/** Fixed text for a failed login; never echoes server or user text. */
export function loginErrorMessage(err: unknown): string {
  if (!(err instanceof ApiError)) {
    return "Login failed unexpectedly. Reload the page and try again.";
  }
  switch (err.code) {
    case "invalid_token":
      return "That token is not valid.";
    case "rate_limited":
      return `Too many failed attempts. Try again in ${err.retryAfter ?? 60} seconds.`;
    case "origin_forbidden":
    case "host_forbidden":
      return "The server refused this page's address. Open the exact address the server printed.";
    case "schema_violation":
      return "A token is 10 to 128 characters long.";
    case "network_error":
      return "Cannot reach the server. Is it running?";
    default:
      return "Login failed. Try again.";
  }
}

export function LoginPage(p: LoginPageProps) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (ev: Event) => {
    ev.preventDefault();
    if (busy) return;
    const value = token.trim();
    if (value.length === 0) {
      setError("Enter the token.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const csrf = await p.client.login(value);
      setToken("");
      p.onLoggedIn(csrf);
    } catch (err) {
      setToken("");
      setError(loginErrorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return html`
    <main class="login" data-testid="login-page">
      <form class="login-card" method="post" onSubmit=${submit} autocomplete="off" novalidate>
        <h1>Agent Builder</h1>
        <p class="login-hint">
          Enter the bootstrap token from <code>.runtime/secrets/web-bootstrap-token</code> in the
          server's home directory.
        </p>
        <label for="login-token">Token</label>
        <input
          id="login-token"
          data-testid="login-token"
          type="password"
          name="token"
          autocomplete="off"
          spellcheck=${false}
          maxlength="128"
          value=${token}
          disabled=${busy}
          onInput=${(e: Event) => setToken((e.target as HTMLInputElement).value)}
        />
        ${error === null ? null : html`
          <p class="login-error" role="alert" data-testid="login-error">${error}</p>
        `}
        <button type="submit" data-testid="login-submit" disabled=${busy} aria-label="Log in">
          ${busy ? "Logging in…" : "Log in"}
        </button>
        <p class="login-note">
          One token represents this whole installation: everyone who logs in manages every Agent.
          This is not multi-user isolation.
        </p>
      </form>
    </main>
  `;
}
