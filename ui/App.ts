/** The application shell. Screens are added by the Gateway and UI issues. */
import { html } from "htm/preact";

export function App() {
  return html`
    <main class="shell" data-testid="shell">
      <h1>Agent Builder</h1>
      <p>Local-first agent runtime.</p>
    </main>
  `;
}
