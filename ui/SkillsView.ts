/**
 * The Skills tab of the Agent panel [LC-3]: the Agent's installed skills
 * (name, tool id, policy `ask`, arguments, archive digest and size), each
 * inspectable — its manifest as stored, the full SHA-256 and the entry
 * script's source — and removable (with a confirmation step); and the
 * install form: a `.tar.gz` file input plus the SHA-256 the operator expects
 * (pasted from the publisher or `sha256sum`). The browser's own digest of the
 * chosen file is shown beside it when the page may compute one (a secure
 * context), so a mismatch is visible before sending; the server checks the
 * pin either way. Every text from a skill is rendered as text (never HTML).
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { errorMessage, type Requester } from "./lib/endpoints.ts";
import { RawBody } from "./api.ts";
import {
  type SkillDetail,
  SkillDetailResponse,
  SkillResponse,
  SkillsResponse,
  type SkillView,
} from "../runtime/protocol/api.ts";
import { parse } from "./lib/types.ts";
import { highlight, languageOf } from "./lib/highlight.ts";
import { describeError } from "./lib/messages.ts";

export interface SkillsViewProps {
  request: Requester;
  agent: { id: string; name: string };
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** The failure as shown: the server's fixed code and its fixed public message. */
function failure(err: unknown): { code: string; message: string } {
  const c = (err as { code?: unknown })?.code;
  const code = typeof c === "string" ? c : "unknown_error";
  return { code, message: errorMessage(err) ?? describeError(code) };
}

async function digestOf(file: Blob): Promise<string | null> {
  if (!globalThis.crypto?.subtle) return null;
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", await file.arrayBuffer()));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function fmtSize(n: number): string {
  return n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

export function SkillsView({ request, agent }: SkillsViewProps) {
  const base = `/api/agents/${encodeURIComponent(agent.id)}/skills`;
  const [skills, setSkills] = useState<SkillView[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<{ code: string; message: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [file, setFile] = useState<File | null>(null);
  const [computed, setComputed] = useState<string | null>(null);
  const [pin, setPin] = useState("");
  const [open, setOpen] = useState<SkillDetail | null>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const [installed, setInstalled] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      setSkills(parse(SkillsResponse, await request("GET", base), "skills").skills);
      setLoaded(true);
    } catch (err) {
      setError(failure(err));
    }
  }, [request, base]);
  useEffect(() => void load(), [load]);

  const choose = async (ev: Event) => {
    const f = (ev.target as HTMLInputElement).files?.[0] ?? null;
    setFile(f);
    setComputed(null);
    setError(null);
    setInstalled(null);
    if (f) setComputed(await digestOf(f).catch(() => null));
  };

  const install = async (ev: Event) => {
    ev.preventDefault();
    if (!file) return;
    setBusy(true);
    setError(null);
    setInstalled(null);
    try {
      const r = parse(
        SkillResponse,
        await request(
          "POST",
          base,
          new RawBody(file, "application/gzip", { "x-skill-sha256": pin.trim() }),
        ),
        "skill",
      );
      setInstalled(r.skill.name);
      setFile(null);
      setComputed(null);
      setPin("");
      (document.getElementById("skill-file") as HTMLInputElement | null)?.form?.reset();
      await load();
    } catch (err) {
      setError(failure(err));
    } finally {
      setBusy(false);
    }
  };

  const inspect = async (name: string) => {
    if (open?.name === name) return setOpen(null);
    setError(null);
    try {
      setOpen(
        parse(
          SkillDetailResponse,
          await request("GET", `${base}/${encodeURIComponent(name)}`),
          "skill",
        )
          .skill,
      );
    } catch (err) {
      setError(failure(err));
    }
  };

  const remove = async (name: string) => {
    setBusy(true);
    setError(null);
    setConfirm(null);
    try {
      await request("DELETE", `${base}/${encodeURIComponent(name)}`);
      if (open?.name === name) setOpen(null);
      await load();
    } catch (err) {
      setError(failure(err));
    } finally {
      setBusy(false);
    }
  };

  const pinOk = HEX64.test(pin.trim());
  const matches = computed !== null && pinOk ? computed === pin.trim().toLowerCase() : null;

  return html`
    <div class="skills-view" data-testid="skills-view">
      <p class="muted small">A skill is one script the Agent may call as${" "}
        <code>skill/name</code>. Every call asks for your approval and runs in the runner
        sandbox: its own files read-only, one scratch output directory, no workspace, no network.
        At most 16 per Agent.</p>
      ${error && html`<p class="models-error" role="alert" data-testid="skills-error">
        ${error.message} <code class="pill">${error.code}</code></p>`}
      ${installed && html`<p class="small" role="status" data-testid="skills-installed">
        Installed <strong>${installed}</strong>.</p>`}
      ${loaded && skills.length === 0 && html`<p class="muted" data-testid="skills-empty">
        No skill is installed for ${agent.name}.</p>`}
      ${skills.length > 0 && html`
        <table class="models-table" data-testid="skills-table">
          <thead>
            <tr>
              <th>Skill</th>
              <th class="skill-wide">Arguments</th>
              <th>Policy</th>
              <th class="skill-wide">Archive</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            ${skills.map((s) =>
              html`
                <tr data-testid="skill" data-name=${s.name}>
                  <td><code>${s.tool_id}</code><div class="small muted">${s.description}</div></td>
                  <td class="small skill-wide">${s.args.join(", ") || "—"}</td>
                  <td><span class="badge">ask</span></td>
                  <td class="small skill-wide"><code title=${s.digest}>${s.digest.slice(
                    0,
                    12,
                  )}…</code>${" "}
                    ${fmtSize(s.archive_bytes)}</td>
                  <td class="skill-actions">
                    <button type="button" class="btn btn-sm" data-testid="skill-inspect"
                      aria-expanded=${String(open?.name === s.name)}
                      onClick=${() => inspect(s.name)}>${open?.name === s.name
                        ? "Hide"
                        : "Inspect"}</button>
                    ${confirm === s.name
                      ? html`
                        <button type="button" class="btn btn-sm btn-danger"
                          data-testid="skill-remove-confirm" disabled=${busy}
                          onClick=${() => remove(s.name)}>Remove ${s.name}?</button>
                        <button type="button" class="btn btn-sm" onClick=${() =>
                          setConfirm(null)}>Keep</button>
                      `
                      : html`
                        <button type="button" class="btn btn-sm btn-ghost" data-testid="skill-remove"
                          aria-label=${`Remove ${s.name}`} onClick=${() =>
                            setConfirm(s.name)}>Remove</button>
                      `}
                  </td>
                </tr>
              `
            )}
          </tbody>
        </table>
      `}
      ${open && html`
        <section class="skill-detail" data-testid="skill-detail" aria-label=${`Skill ${open.name}`}>
          <dl class="agent-facts">
            <div class="kv">
              <dt>Tool</dt>
              <dd>${open.tool_id}</dd>
            </div>
            <div class="kv">
              <dt>Entry script</dt>
              <dd>${open.entry}</dd>
            </div>
            <div class="kv">
              <dt>Archive SHA-256</dt>
              <dd data-testid="skill-digest">${open.digest}</dd>
            </div>
            <div class="kv">
              <dt>Installed</dt>
              <dd>${new Date(open.installed_at).toLocaleString()}</dd>
            </div>
          </dl>
          <h3 class="small skill-heading">skill.json</h3>
          <pre class="ws-code" data-testid="skill-manifest">${open.manifest_text}</pre>
          <h3 class="small skill-heading">${open.entry}</h3>
          ${open.hidden_characters > 0 && html`
            <p class="models-error small" role="alert"
              data-testid="skill-hidden">The script holds ${open.hidden_characters} hidden
                        characters (bidi or invisible controls that can make code read differently than it
                        runs); each is shown as <code>\\u{HEX}</code>.</p>
          `}
          <pre class="ws-code" data-testid="skill-source">${open.hidden_characters > 0
            ? open.source_visible
            : highlight(open.source, languageOf(open.entry)).map((t) =>
              t.kind === "plain" ? t.text : html`<span class=${`tok-${t.kind}`}>${t.text}</span>`
            )}</pre>
        </section>
      `}
      <form class="skill-install" onSubmit=${install} data-testid="skill-install-form">
        <h3 class="small skill-heading">Install a skill</h3>
        <label class="small" for="skill-file">Archive (.tar.gz, ≤ 12 KiB)</label>
        <input id="skill-file" type="file" accept=".tar.gz,.tgz,application/gzip"
          data-testid="skill-file" onChange=${choose} />
        <label class="small" for="skill-sha">Expected SHA-256 of the archive</label>
        <input id="skill-sha" class="input mono" data-testid="skill-sha" spellcheck="false"
          autocomplete="off" placeholder="64 hex digits, e.g. from sha256sum" value=${pin}
          onInput=${(e: Event) => setPin((e.target as HTMLInputElement).value)} />
        ${computed && html`<p class="small" data-testid="skill-computed">This file's SHA-256:${" "}
          <code>${computed}</code>${
          matches === true &&
          html`
            <span class="badge" data-testid="skill-match">matches</span>
          `
        }${
          matches === false &&
          html`
            <span class="pill" data-testid="skill-mismatch">does not match</span>
          `
        }</p>`}
        <div>
          <button type="submit" class="btn btn-primary btn-sm" data-testid="skill-install"
            disabled=${busy || !file || !pinOk}>Install</button>
        </div>
      </form>
    </div>
  `;
}
