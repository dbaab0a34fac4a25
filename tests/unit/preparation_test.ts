/**
 * The context-preparation state machine [§13]: phases, the commit point,
 * cancel semantics (in flight / foreign / unknown / finished) and the bound
 * on remembered finished operations.
 */
import { assertEquals, assertRejects } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import { PREPARATIONS_FINISHED_REMEMBERED } from "../../runtime/limits.ts";
import { type PhasePause, Preparations } from "../../runtime/runs/preparation.ts";
import { pauseAt } from "../../runtime/runs/test_hooks.ts";

const A = "00000000-0000-4000-8000-000000000001";
const B = "00000000-0000-4000-8000-000000000002";
const C1 = "11111111-1111-4111-8111-111111111111";
const C2 = "22222222-2222-4222-8222-222222222222";

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return "no error";
}

Deno.test("a preparation walks its phases and reports id, kind, phase and start time", async () => {
  const preps = new Preparations(() => 1234);
  const op = preps.begin(A, C1, "compact");
  assertEquals(op.view(), {
    operation_id: op.id,
    kind: "compact",
    phase: "reading_inputs",
    started_at: 1234,
  });
  await op.enter("compiling");
  assertEquals(preps.current(A, C1)?.view().phase, "compiling");
  await op.enter("admitting");
  op.commit();
  assertEquals(op.view().phase, "committing");
  op.settle("committed");
  assertEquals([preps.current(A, C1), preps.inFlight, preps.outcome(op.id)], [
    null,
    0,
    "committed",
  ]);
});

Deno.test("one preparation per Conversation; other Conversations and Agents are independent", () => {
  const preps = new Preparations(Date.now);
  preps.begin(A, C1, "run");
  assertEquals(codeOf(() => preps.begin(A, C1, "run")), "conversation_busy");
  preps.begin(A, C2, "run");
  preps.begin(B, C1, "run");
  assertEquals(preps.inFlight, 3);
});

Deno.test("cancel stops a paused phase at once and the operation can never commit", async () => {
  let entered!: () => void;
  const reached = new Promise<void>((r) => (entered = r));
  const pause: PhasePause = (phase, signal) => {
    if (phase === "compiling") entered();
    return pauseAt("compiling", 60_000)(phase, signal);
  };
  const preps = new Preparations(Date.now, pause);
  const op = preps.begin(A, C1, "run");
  await op.enter("reading_inputs");
  const compiling = op.enter("compiling");
  await reached;
  const t0 = performance.now();
  assertEquals(preps.cancel(A, C1, op.id), { operation_id: op.id, state: "cancelling" });
  await assertRejects(
    () => compiling,
    (e) => assertEquals(e instanceof AppError && e.code, "preparation_cancelled"),
  );
  assertEquals(performance.now() - t0 < 5000, true, "cancel does not wait out the 60 s pause");
  assertEquals(codeOf(() => op.commit()), "preparation_cancelled");
  op.settle("cancelled");
  assertEquals(codeOf(() => preps.cancel(A, C1, op.id)), "preparation_finished");
  assertEquals(preps.outcome(op.id), "cancelled");
});

Deno.test("cancel is 404 for unknown and foreign ids and 409 after the commit point", () => {
  const preps = new Preparations(Date.now);
  const op = preps.begin(A, C1, "run");
  assertEquals(codeOf(() => preps.cancel(A, C1, crypto.randomUUID())), "preparation_not_found");
  assertEquals(codeOf(() => preps.cancel(A, C2, op.id)), "preparation_not_found");
  assertEquals(codeOf(() => preps.cancel(B, C1, op.id)), "preparation_not_found");
  op.commit();
  assertEquals(codeOf(() => preps.cancel(A, C1, op.id)), "preparation_finished");
  op.settle("committed");
  assertEquals(codeOf(() => preps.cancel(A, C1, op.id)), "preparation_finished");
  // A finished operation stays foreign to every other Conversation.
  assertEquals(codeOf(() => preps.cancel(A, C2, op.id)), "preparation_not_found");
});

Deno.test("at most 64 finished operations are remembered, oldest forgotten first", () => {
  const preps = new Preparations(Date.now);
  const ids: string[] = [];
  for (let i = 0; i <= PREPARATIONS_FINISHED_REMEMBERED; i++) {
    const op = preps.begin(A, C1, "run");
    op.settle("failed");
    ids.push(op.id);
  }
  assertEquals(preps.outcome(ids[0]), null);
  assertEquals(codeOf(() => preps.cancel(A, C1, ids[0])), "preparation_not_found");
  assertEquals(preps.outcome(ids[1]), "failed");
  assertEquals(codeOf(() => preps.cancel(A, C1, ids.at(-1)!)), "preparation_finished");
  assertEquals(codeOf(() => preps.cancel(A, C1, ids[1])), "preparation_finished");
});
