/**
 * The command service [SC-1]: every result says model_invoked=false and
 * turn_created=false, /model and /compact only return effects, results stay
 * ≤ COMMAND_RESULT_MAX_BYTES, and unknown conversations refuse before any
 * command runs. Ports are an in-memory table that records every call.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import { COMMAND_RESULT_MAX_BYTES } from "../../runtime/limits.ts";
import type { CommandPorts, PendingPermissionFacts } from "../../runtime/commands/ports.ts";
import { boundResult, createCommandService } from "../../runtime/commands/service.ts";

const AGENT = "00000000-0000-4000-8000-000000000001";
const CONV = "conv-1";

function ports(opts: { activeRunId?: string | null; pending?: PendingPermissionFacts[] } = {}) {
  const calls: string[] = [];
  const p: CommandPorts = {
    agent(id) {
      calls.push(`agent ${id}`);
      if (id !== AGENT) throw new AppError("agent_not_found");
      return Promise.resolve({ id, name: "System", state: "active", generation: 1 });
    },
    conversation(agentId, id) {
      calls.push(`conversation ${id}`);
      if (agentId !== AGENT || id !== CONV) throw new AppError("conversation_not_found");
      return Promise.resolve({
        id,
        title: "Hello",
        activeRunId: opts.activeRunId ?? null,
        turnCount: 3,
      });
    },
    models() {
      calls.push("models");
      return Promise.resolve([
        { id: "qwen3.5:2b", available: true, window: 32768 },
        { id: "other", available: false, reason: "not_found" },
      ]);
    },
    contextPreview(_a, id) {
      calls.push(`preview ${id}`);
      return Promise.resolve({ window: 32768, remaining_percent: 97, scope: { model: "q" } });
    },
    runContext(_a, run) {
      calls.push(`context ${run}`);
      if (run !== "run1") throw new AppError("run_not_found");
      return Promise.resolve({ sections: [1, 2, 3], budget: 28672 });
    },
    pendingPermissions() {
      calls.push("permissions");
      return Promise.resolve(opts.pending ?? []);
    },
    cancelRun(_a, run) {
      calls.push(`cancel ${run}`);
      return Promise.resolve();
    },
  };
  return { p, calls };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return "ok";
}

Deno.test("every command result says the model was not invoked and no turn was created", async () => {
  const { p } = ports({ activeRunId: "run1" });
  const svc = createCommandService(p);
  for (
    const input of [
      "/status",
      "/context",
      "/ctx run1",
      "/model",
      "/model qwen3.5:2b",
      "/compact",
      "/permissions",
      "/perms",
      "/cancel",
      "/stop run1",
      "/clear",
    ]
  ) {
    const r = await svc.execute(AGENT, CONV, input);
    assertEquals([r.model_invoked, r.turn_created], [false, false], input);
    assert(JSON.stringify(r).length <= COMMAND_RESULT_MAX_BYTES, input);
  }
});

Deno.test("/status reports the agent, conversation, active run and model availability", async () => {
  const { p } = ports({ activeRunId: "run9" });
  const r = await createCommandService(p).execute(AGENT, CONV, "/status");
  assertEquals(r.command, "status");
  const byLabel = Object.fromEntries(r.lines.map((l) => [l.label, l.value]));
  assertEquals(byLabel["Active run"], "run9");
  assertEquals(byLabel["Turns"], "3");
  assertEquals(byLabel["Model qwen3.5:2b"], "available, window 32768");
  assertEquals(byLabel["Model other"], "unavailable (not_found)");
  assertEquals(r.effect, null);
});

Deno.test("/model and /compact return only a UI effect for the next turn", async () => {
  const { p, calls } = ports();
  const svc = createCommandService(p);
  const m = await svc.execute(AGENT, CONV, "/model qwen3.5:2b");
  assertEquals(m.effect, { type: "set_model", model_id: "qwen3.5:2b" });
  const c = await svc.execute(AGENT, CONV, "/compact");
  assertEquals(c.effect, { type: "compact_summary" });
  const clear = await svc.execute(AGENT, CONV, "/clear");
  assertEquals(clear.effect, { type: "new_conversation" });
  assertEquals(await codeOf(svc.execute(AGENT, CONV, "/model nope")), "model_not_found");
  assert(!calls.some((c) => c.startsWith("cancel")), "no side effects");
});

Deno.test("/cancel targets the active run, and says so when there is none", async () => {
  const busy = ports({ activeRunId: "run7" });
  const r = await createCommandService(busy.p).execute(AGENT, CONV, "/stop");
  assertEquals(r.command, "cancel");
  assert(busy.calls.includes("cancel run7"));
  const idle = ports();
  const r2 = await createCommandService(idle.p).execute(AGENT, CONV, "/cancel");
  assertEquals(r2.lines, [{ label: "Active run", value: "none" }]);
  assert(!idle.calls.some((c) => c.startsWith("cancel")));
});

Deno.test("/context shows the next-turn projection or a run's metadata", async () => {
  const { p } = ports();
  const svc = createCommandService(p);
  const next = await svc.execute(AGENT, CONV, "/context");
  assertEquals(next.lines, [
    { label: "window", value: "32768" },
    { label: "remaining_percent", value: "97" },
    { label: "scope.model", value: "q" },
  ]);
  const run = await svc.execute(AGENT, CONV, "/ctx run1");
  assertEquals(run.lines, [
    { label: "sections", value: "3 items" },
    { label: "budget", value: "28672" },
  ]);
  assertEquals(await codeOf(svc.execute(AGENT, CONV, "/context run2")), "run_not_found");
});

Deno.test("unknown conversations and agents refuse before the command runs", async () => {
  const { p, calls } = ports({ activeRunId: "run1" });
  const svc = createCommandService(p);
  assertEquals(await codeOf(svc.execute(AGENT, "other", "/cancel")), "conversation_not_found");
  assertEquals(await codeOf(svc.execute("foreign", CONV, "/clear")), "conversation_not_found");
  assert(!calls.some((c) => c.startsWith("cancel")));
  // Parsing refuses before any port is touched.
  const before = calls.length;
  assertEquals(await codeOf(svc.execute(AGENT, CONV, "/nope")), "command_unknown");
  assertEquals(await codeOf(svc.execute(AGENT, CONV, "/status\n")), "command_invalid");
  assertEquals(calls.length, before);
});

Deno.test("a listing larger than the result bound is cut with a fixed marker", async () => {
  const pending = Array.from({ length: 2000 }, (_, i) => ({
    id: `perm-${i}`,
    tool: "file/write",
    summary: "x".repeat(64),
  }));
  const { p } = ports({ pending });
  const r = await createCommandService(p).execute(AGENT, CONV, "/permissions");
  const bytes = new TextEncoder().encode(JSON.stringify(r)).byteLength;
  assert(bytes <= COMMAND_RESULT_MAX_BYTES, `result is ${bytes} bytes`);
  assert(r.truncated);
  assertEquals(r.lines.at(-1), { label: "…", value: "output truncated" });
  assert(r.lines.length > 100, "keeps as much as fits");
});

Deno.test("boundResult leaves results within the bound untouched", () => {
  const r = {
    command: "status",
    model_invoked: false as const,
    turn_created: false as const,
    title: "t",
    lines: [{ label: "a", value: "b" }],
    effect: null,
    truncated: false,
  };
  assertEquals(boundResult(r), r);
  const huge = { ...r, lines: [{ label: "a", value: "v".repeat(COMMAND_RESULT_MAX_BYTES) }] };
  const cut = boundResult(huge);
  assert(new TextEncoder().encode(JSON.stringify(cut)).byteLength <= COMMAND_RESULT_MAX_BYTES);
  assertEquals(cut.truncated, true);
});
