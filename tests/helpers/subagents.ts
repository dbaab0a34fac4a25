/**
 * Helpers for delegation tests [LC-2]: a second (delegate) Agent, the parent's
 * `agent/delegate` call approved through the real permission route, and SSE
 * reads of any Agent's Run. Everything goes through the real server.
 */
import { readSse, type RunHarness, type SseFrame, submit } from "./runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import type { ScriptSource } from "../../tools/fake_ollama/server.ts";

/** Creates an Agent and returns its id. */
export async function createAgent(h: RunHarness, name: string): Promise<string> {
  const r = await h.api("POST", "/api/agents", { name });
  if (r.status !== 201) throw new Error(`create agent: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.agent.id;
}

/** A Conversation of `agent`. */
export async function conversationOf(h: RunHarness, agent: string, title = "t"): Promise<string> {
  const r = await h.api("POST", `/api/agents/${agent}/sessions`, { title });
  if (r.status !== 201) throw new Error(`create conversation: ${r.status}`);
  return r.body.session.id;
}

/** The model's `agent/delegate` call. */
export function delegateCall(agentId: string, message: string): ScriptSource {
  return scenarios.toolCall([{
    name: "agent__delegate",
    arguments: { agent_id: agentId, message },
  }]);
}

/** Reads the SSE stream of a Run of `agent` (to its end, or `until`). */
export function sseOf(
  h: RunHarness,
  agent: string,
  runId: string,
  opts: { until?: (f: SseFrame) => boolean; timeoutMs?: number } = {},
): Promise<SseFrame[]> {
  return readSse({ ...h, agent }, runId, opts);
}

/** Submits `message` in `conv` of `agent`; returns the Run id (202 expected). */
export async function submitIn(
  h: RunHarness,
  agent: string,
  conv: string,
  message: string,
): Promise<string> {
  const r = await submit({ ...h, agent }, conv, message);
  if (r.status !== 202) {
    throw new Error(`submit: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return r.body.run_id;
}

/** Waits for the parent's delegate approval and approves it; returns its permission id. */
export async function approveDelegation(h: RunHarness, runId: string): Promise<string> {
  const frames = await readSse(h, runId, {
    until: (f) => f.event === "permission.requested",
  });
  const req = frames.at(-1)!;
  if (req.event !== "permission.requested") throw new Error("no delegate approval was asked");
  const id = req.data.payload.permission_id;
  const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, {
    decision: "approve",
  });
  if (d.status !== 200) throw new Error(`approve: ${d.status} ${JSON.stringify(d.body)}`);
  return id;
}

/** The `subagent.status` payloads of a Run's frames. */
// deno-lint-ignore no-explicit-any
export function statuses(frames: SseFrame[]): any[] {
  return frames.filter((f) => f.event === "subagent.status").map((f) => f.data.payload);
}

/** The `tool.call.completed` payload of the delegate call. */
// deno-lint-ignore no-explicit-any
export function delegateResult(frames: SseFrame[]): any {
  return frames.find((f) =>
    f.event === "tool.call.completed" && f.data.payload.tool_id === "agent/delegate"
  )?.data.payload;
}

/**
 * A model answer that keeps streaming for about 100 s (one word every 250 ms): a Run that is
 * busy but never idle, unlike `stall()`, which the Broker fails after its 20 s idle bound.
 */
export function slowAnswer(): ScriptSource {
  const words = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");
  return scenarios.text(words, { frameDelayMs: 250 });
}
