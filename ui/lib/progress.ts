/**
 * Progress of a long Turn [SB-8] from its durable events: which model call
 * (step) it is at and how many tools it used, and the step each event
 * belongs to (the Run details timeline groups by it). Pure; no DOM.
 * An overflow-recovery request (`recovery: 1`) repeats its step, it is not a
 * new one.
 */
import type { EventEnvelope } from "./types.ts";

export interface TurnProgress {
  /** Model calls started (1-based step of the current one; 0 before the first). */
  step: number;
  /** Tool calls completed. */
  tools: number;
}

const isStep = (e: EventEnvelope) => e.kind === "model.request.started" && e.payload.recovery !== 1;

export function turnProgress(events: readonly EventEnvelope[]): TurnProgress {
  let step = 0;
  let tools = 0;
  for (const e of events) {
    if (isStep(e)) step++;
    else if (e.kind === "tool.call.completed") tools++;
  }
  return { step, tools };
}

/** "step 7 · 5 tools used"; null until the Turn has used a tool (a plain answer needs none). */
export function progressLabel(p: TurnProgress): string | null {
  if (p.tools === 0) return null;
  return `step ${p.step} · ${p.tools} ${p.tools === 1 ? "tool" : "tools"} used`;
}

/**
 * The step of every event in seq order: 0 before the first model call, then
 * the number of the model call it follows (its tool calls belong to it).
 */
export function stepsBySeq(events: readonly EventEnvelope[]): Map<number, number> {
  const sorted = [...events].filter((e) => e.seq >= 0).sort((a, b) => a.seq - b.seq);
  const out = new Map<number, number>();
  let step = 0;
  for (const e of sorted) {
    if (isStep(e)) step++;
    out.set(e.seq, step);
  }
  return out;
}
