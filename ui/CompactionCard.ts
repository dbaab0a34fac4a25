/**
 * The `/compact` card [CX-9]: asks the server for the model's summary of the
 * older history, shows it, and lets the operator keep or drop it; a kept
 * summary can be undone from the same card. A failed, timed-out or oversized
 * summary shows its fixed message — nothing was stored. The transcript is
 * never touched; only the next Turns' context changes.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { CompactionResponse, type CompactionView } from "../runtime/protocol/api.ts";
import { errorCode, errorMessage, type Requester } from "./lib/endpoints.ts";
import { parse } from "./lib/types.ts";

export interface CompactionCardProps {
  request: Requester;
  agentId: string;
  convId: string;
  /** The projection changed (kept or undone): the meter refreshes. */
  onChanged(): void;
  onClose(): void;
}

type Phase =
  | { kind: "asking" }
  | { kind: "shown"; c: CompactionView }
  | { kind: "error"; message: string };

export function CompactionCard(p: CompactionCardProps) {
  const [phase, setPhase] = useState<Phase>({ kind: "asking" });
  const [busy, setBusy] = useState(false);
  const base = `/api/agents/${encodeURIComponent(p.agentId)}/sessions/${
    encodeURIComponent(p.convId)
  }/compactions`;
  const fail = (err: unknown) =>
    setPhase({ kind: "error", message: errorMessage(err) ?? errorCode(err) });

  useEffect(() => {
    let live = true;
    p.request("POST", base, {}).then(
      (v) =>
        live &&
        setPhase({ kind: "shown", c: parse(CompactionResponse, v, "compaction").compaction }),
      (err) => live && fail(err),
    );
    return () => {
      live = false;
    };
  }, [base]);

  const decide = async (verb: "keep" | "drop" | "undo") => {
    if (phase.kind !== "shown") return;
    setBusy(true);
    try {
      const v = await p.request("POST", `${base}/${phase.c.id}/${verb}`, {});
      const c = parse(CompactionResponse, v, "compaction").compaction;
      if (verb === "drop") return p.onClose();
      setPhase({ kind: "shown", c });
      p.onChanged();
    } catch (err) {
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  return html`
    <section class="compaction-card" data-testid="compaction-card" aria-label="Compaction"
      data-state=${phase.kind === "shown" ? phase.c.state : phase.kind}>
      <header>
        <strong>${phase.kind === "asking"
          ? "Summarizing the older history…"
          : phase.kind === "error"
          ? "No summary"
          : phase.c.state === "active"
          ? `Kept: ${phase.c.turns} earlier turn${phase.c.turns === 1 ? "" : "s"} summarized`
          : phase.c.state === "undone"
          ? "Undone: the full history is used again"
          : `Summary of ${phase.c.turns} earlier turn${phase.c.turns === 1 ? "" : "s"}`}</strong>
        <span class="muted">written by the model · the transcript is unchanged</span>
      </header>
      ${phase.kind === "error" && html`
        <p role="alert" data-testid="compaction-error">${phase.message} Nothing was stored.</p>
      `}
      ${phase.kind === "shown" && phase.c.state !== "undone" && html`
        <pre class="compaction-summary" data-testid="compaction-summary">${phase.c.summary}</pre>
      `}
      <div class="compaction-actions">
        ${phase.kind === "shown" && phase.c.state === "pending" && html`
          <button type="button" class="btn btn-primary" disabled=${busy}
            data-testid="compaction-keep" onClick=${() => decide("keep")}>Keep summary</button>
          <button type="button" class="btn" disabled=${busy} data-testid="compaction-drop"
            onClick=${() => decide("drop")}>Drop</button>
        `}
        ${phase.kind === "shown" && phase.c.state === "active" && html`
          <button type="button" class="btn" disabled=${busy} data-testid="compaction-undo"
            onClick=${() => decide("undo")}>Undo</button>
        `}
        ${(phase.kind !== "shown" || phase.c.state !== "pending") && html`
          <button type="button" class="btn" data-testid="compaction-close"
            disabled=${phase.kind === "asking"} onClick=${p.onClose}>Close</button>
        `}
      </div>
    </section>
  `;
}
