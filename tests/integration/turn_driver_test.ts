/**
 * The Control Plane turn driver against the real HarnessKernel (in-process,
 * over strict-schema queues) and against a hostile Worker that sends
 * well-formed but illegal frames [SB-4, SB-5, TL-1]. The model is the real
 * Broker talking to the scripted Ollama server; the journal is real SQLite.
 * A breach is: a tool executed or a model request sent for an illegal frame,
 * or a Worker code replacing the Broker's.
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { compileContextPlan, FINALIZATION_MARKER } from "../../runtime/context/plan.ts";
import { genesisDigest, RunJournal } from "../../runtime/events/journal.ts";
import { LiveHub } from "../../runtime/events/live_hub.ts";
import { runHarnessKernel } from "../../runtime/kernel/harness_kernel.ts";
import {
  RUN_DEADLINE_MS,
  WORKER_CALLS_PER_RESPONSE_MAX,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../../runtime/limits.ts";
import type { ModelBroker } from "../../runtime/model/types.ts";
import {
  type ControlToWorker,
  parseControlFrame,
  parseWorkerFrame,
  type TurnRuntimeSnapshot,
  type WorkerToControl,
} from "../../runtime/protocol/worker_frames.ts";
import { RunRecorder, type Terminal } from "../../runtime/runs/run_recorder.ts";
import { driveTurn, type WorkerChannel } from "../../runtime/runs/turn_driver.ts";
import { beginTurn } from "../../runtime/store/agent_state_store.ts";
import { insertRun, listEvents } from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { sealCatalog } from "../../runtime/tools/catalog.ts";
import { resolveToolSet } from "../../runtime/tools/policy.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import type { FakeOllama } from "../../tools/fake_ollama/server.ts";
import { makeTempHome } from "../helpers/home.ts";
import { memoryLogger, withBroker } from "../helpers/model.ts";

const AGENT = "44444444-4444-4444-8444-444444444444";
const CONV = "55555555-5555-4555-8555-555555555555";

interface Fixture {
  db: DatabaseSync;
  workspace: string;
  run(ch: WorkerChannel): Promise<Terminal>;
  snapshot: TurnRuntimeSnapshot;
  kinds(): string[];
  operations(): number;
}

function fixture(
  broker: ModelBroker,
  budget = 28672,
  limits: Partial<Pick<TurnRuntimeSnapshot, "model_calls_max" | "tool_calls_max">> = {},
): Fixture {
  const home = makeTempHome();
  const workspace = `${home}/ws`;
  Deno.mkdirSync(workspace, { mode: 0o700 });
  Deno.writeTextFileSync(`${workspace}/a.txt`, "alpha\n", { mode: 0o600 });
  const db = openDatabase({ root: home, relative: "state.sqlite", migrations: AGENT_MIGRATIONS });
  db.prepare("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, 't', 0, 0)")
    .run(CONV);
  const runId = crypto.randomUUID();
  const turnId = crypto.randomUUID();
  beginTurn(db, {
    conversationId: CONV,
    expectedRevision: 0,
    turnId,
    runId,
    userMessage: "q",
    now: 0,
  });
  insertRun(db, {
    id: runId,
    conversation_id: CONV,
    turn_id: turnId,
    model_id: "qwen3.5:2b",
    started_summary: "{}",
    last_digest: genesisDigest(runId),
    created_at: 0,
  });
  const toolset = resolveToolSet({
    catalog: sealCatalog(),
    rules: [],
    interactive: false,
    id: crypto.randomUUID(),
  });
  const plan = compileContextPlan({
    planId: crypto.randomUUID(),
    instructions: null,
    now: new Date(),
    history: [],
    userMessage: "q",
    toolset,
    window: 32768,
    budget,
    modelId: "qwen3.5:2b",
  });
  const snapshot: TurnRuntimeSnapshot = {
    run_id: runId,
    model_id: "qwen3.5:2b",
    plan: { id: plan.id, digest: plan.digest },
    toolset: {
      id: toolset.id,
      digest: toolset.digest,
      tool_ids: toolset.tools.map((t) => t.spec.id),
    },
    model_calls_max: WORKER_MODEL_CALLS_MAX,
    tool_calls_max: WORKER_TOOL_CALLS_MAX,
    deadline_ms: RUN_DEADLINE_MS,
    ...limits,
  };
  const journal = new RunJournal({ run_id: runId, agent_id: AGENT, conversation_id: CONV });
  const recorder = new RunRecorder({
    db,
    journal,
    live: new LiveHub().create(runId, AGENT),
    turnId,
    log: memoryLogger(),
    now: Date.now,
    startedAt: Date.now(),
  });
  recorder.durable("run.started", {
    turn_id: turnId,
    model_id: "qwen3.5:2b",
    plan_id: plan.id,
    plan_digest: plan.digest,
    toolset_digest: toolset.digest,
    tool_ids: snapshot.toolset.tool_ids,
    section_count: plan.sections.length,
    history_count: 0,
    window: 32768,
    budget: 28672,
    protocol_features: [],
  });
  return {
    db,
    workspace,
    snapshot,
    run: (ch) =>
      driveTurn(ch, {
        snapshot,
        plan,
        workspaceDir: workspace,
        broker,
        recorder,
        db,
        log: memoryLogger(),
        now: Date.now,
        deadline: Date.now() + 30_000,
        signal: new AbortController().signal,
        abortReason: () => null,
        scope: "scope",
      }),
    kinds: () => listEvents(db, runId).map((e) => e.kind),
    operations: () => (db.prepare("SELECT count(*) AS n FROM operations").get() as { n: number }).n,
  };
}

/** An in-memory channel pair with schema validation in both directions. */
function kernelChannel(): WorkerChannel {
  const toWorker: ControlToWorker[] = [];
  const toControl: WorkerToControl[] = [];
  let wakeW: (() => void) | null = null;
  let wakeC: (() => void) | null = null;
  const take = async <T>(q: T[], park: (f: () => void) => void): Promise<T> => {
    while (q.length === 0) await new Promise<void>((r) => park(r));
    return q.shift()!;
  };
  runHarnessKernel({
    send(f) {
      ok(parseWorkerFrame(f).ok);
      toControl.push(f);
      wakeC?.();
      return Promise.resolve();
    },
    receive: () => take(toWorker, (r) => (wakeW = r)),
  });
  return {
    send(f) {
      ok(parseControlFrame(f).ok);
      toWorker.push(f);
      wakeW?.();
      return Promise.resolve();
    },
    receive: () => take(toControl, (r) => (wakeC = r)),
  };
}

/** A hostile Worker: each CP frame is answered by the next scripted reply (or EOF). */
function hostile(script: ((cp: ControlToWorker) => WorkerToControl | null)[]): WorkerChannel {
  const out: (WorkerToControl | null)[] = [];
  let i = 0;
  return {
    send(f) {
      const next = script[i++];
      out.push(next ? next(f) : null);
      return Promise.resolve();
    },
    receive: () => Promise.resolve(out.shift() ?? null),
  };
}

function modelCall(snap: TurnRuntimeSnapshot, over: Partial<Record<string, unknown>> = {}) {
  return {
    v: 2,
    type: "model.call",
    request_id: 1,
    iteration: 1,
    plan: snap.plan,
    toolset: snap.toolset,
    tool_results: [],
    finalize: false,
    ...over,
  } as WorkerToControl;
}

async function withFixture(
  fn: (f: Fixture, o: FakeOllama) => Promise<void>,
  budget?: number,
  limits?: Parameters<typeof fixture>[2],
): Promise<void> {
  await withBroker(({ broker, ollama }) => fn(fixture(broker, budget, limits), ollama));
}

Deno.test("driveTurn(): the real kernel completes a tool round-trip with the driver", async () => {
  await withFixture(async (f, ollama) => {
    ollama.enqueue(
      scenarios.toolCall([{ name: "file__read_text", arguments: { path: "a.txt" } }]),
      scenarios.text("It says alpha."),
    );
    const t = await f.run(kernelChannel());
    assertEquals(t.state, "completed");
    ok(t.state === "completed" && t.answer.text === "It says alpha.");
    assertEquals(f.operations(), 1);
    ok(f.kinds().includes("tool.call.completed"));
  });
});

Deno.test("driveTurn(): four calls in one response run in order; a fifth refuses the response whole", async () => {
  const reads = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      name: "file__read_text",
      arguments: { path: "a.txt", offset: i },
    }));
  await withFixture(async (f, ollama) => {
    ollama.enqueue(
      scenarios.toolCall(reads(WORKER_CALLS_PER_RESPONSE_MAX)),
      scenarios.text("Four reads."),
    );
    const t = await f.run(kernelChannel());
    assertEquals(t.state, "completed");
    assertEquals(f.operations(), WORKER_CALLS_PER_RESPONSE_MAX);
    const tools = ollama.chats[1].body.messages.filter((m: { role: string }) => m.role === "tool");
    assertEquals(tools.length, WORKER_CALLS_PER_RESPONSE_MAX);
  });
  await withFixture(async (f, ollama) => {
    ollama.enqueue(scenarios.toolCall(reads(WORKER_CALLS_PER_RESPONSE_MAX + 1)));
    const t = await f.run(kernelChannel());
    assertEquals(t, { state: "failed", code: "model_tool_loop", stage: "model" });
    assertEquals(f.operations(), 0);
    ok(!f.kinds().includes("tool.call.requested"));
  });
});

Deno.test("driveTurn(): with an Agent's tool budget of two the third call has no tools and the finalization marker", async () => {
  await withFixture(
    async (f, ollama) => {
      ollama.enqueue(
        scenarios.toolCall([{ name: "file__stat", arguments: { path: "a.txt" } }]),
        scenarios.toolCall([{ name: "file__read_text", arguments: { path: "a.txt" } }]),
        scenarios.toolCall([{ name: "file__glob", arguments: { pattern: "*" } }]),
      );
      const t = await f.run(kernelChannel());
      assertEquals(t, { state: "failed", code: "model_tool_loop", stage: "model" });
      assertEquals(ollama.chats.length, 3);
      const third = ollama.chats[2].body;
      ok(third.tools === undefined || third.tools.length === 0);
      assertEquals(third.messages.at(-1), { role: "system", content: FINALIZATION_MARKER });
      assertEquals(f.operations(), 2, "the third tool call is never executed");
    },
    undefined,
    { tool_calls_max: 2 },
  );
});

Deno.test("driveTurn(): a Worker naming a call id that is not pending executes nothing", async () => {
  await withFixture(async (f, ollama) => {
    ollama.enqueue(scenarios.toolCall([{ name: "file__stat", arguments: { path: "a.txt" } }]));
    const t = await f.run(hostile([
      () => modelCall(f.snapshot),
      () => ({
        v: 2,
        type: "tool.call",
        request_id: 2,
        iteration: 1,
        call_id: "call-2",
        tool_id: "file/stat",
      }),
    ]));
    assertEquals(t, { state: "failed", code: "worker_protocol_error", stage: "worker" });
    assertEquals(f.operations(), 0);
  });
});

Deno.test("driveTurn(): a forged plan reference never reaches the model", async () => {
  await withFixture(async (f, ollama) => {
    const forged = { ...f.snapshot.plan, digest: `sha256:${"0".repeat(64)}` };
    const t = await f.run(hostile([() => modelCall(f.snapshot, { plan: forged })]));
    assertEquals(t, { state: "failed", code: "worker_protocol_error", stage: "worker" });
    assertEquals(ollama.chats.length, 0);
  });
});

Deno.test("driveTurn(): finalize before two tool calls is a protocol error", async () => {
  await withFixture(async (f, ollama) => {
    const t = await f.run(hostile([() => modelCall(f.snapshot, { finalize: true })]));
    assertEquals(t.state === "failed" && t.code, "worker_protocol_error");
    assertEquals(ollama.chats.length, 0);
  });
});

Deno.test("driveTurn(): a Worker claiming completion without an answer is refused", async () => {
  await withFixture(async (f) => {
    const t = await f.run(hostile([() => ({
      v: 2,
      type: "turn.finish",
      outcome: {
        kind: "completed",
        reason: "stop",
        answer_digest: `sha256:${"1".repeat(64)}`,
        model_calls: 1,
        tool_calls: 0,
      },
    })]));
    assertEquals(t, { state: "failed", code: "worker_protocol_error", stage: "worker" });
  });
});

Deno.test("driveTurn(): the Broker's error code survives a Worker reporting another", async () => {
  await withFixture(async (f, ollama) => {
    ollama.enqueue(scenarios.serverError(500), scenarios.serverError(500));
    const t = await f.run(hostile([
      () => modelCall(f.snapshot),
      () => ({ v: 2, type: "turn.finish", outcome: { kind: "failed", code: "worker_crashed" } }),
    ]));
    ok(t.state === "failed" && t.stage === "model", JSON.stringify(t));
    ok(t.state === "failed" && t.code !== "worker_crashed");
  });
});

Deno.test("driveTurn(): a Worker that exits mid-Turn fails the Turn with worker_crashed", async () => {
  await withFixture(async (f) => {
    const t = await f.run(hostile([]));
    assertEquals(t, { state: "failed", code: "worker_crashed", stage: "worker" });
  });
});

Deno.test("driveTurn(): admission is re-checked before the call that follows a tool result", async () => {
  // A budget the first call fits (tool schemas included) but not with a 3 KiB tool result.
  await withFixture(async (f, ollama) => {
    Deno.writeTextFileSync(`${f.workspace}/big.txt`, "z".repeat(3000) + "\n", { mode: 0o600 });
    ollama.enqueue(
      scenarios.toolCall([{ name: "file__read_text", arguments: { path: "big.txt" } }]),
      scenarios.text("never sent"),
    );
    const t = await f.run(kernelChannel());
    assertEquals(t, { state: "failed", code: "model_context_limit", stage: "context" });
    assertEquals(ollama.chats.length, 1, "the over-budget call never reaches the provider");
    assertEquals(f.operations(), 1);
  }, 4000);
});
