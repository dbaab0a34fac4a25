import { assertEquals } from "../helpers/assert.ts";
import { warmUpKernel } from "../../runtime/kernel/warm_up.ts";
import { WORKER_WARM_UP_TURNS } from "../../runtime/limits.ts";

Deno.test("the Worker warm-up Turn passes every frame schema and completes through a tool call and an answer", async () => {
  assertEquals(await warmUpKernel(), true);
});

Deno.test("the warm-up stops at the step where it is told a real frame is waiting", async () => {
  assertEquals(await warmUpKernel(() => true), false);
  let asked = 0;
  assertEquals(await warmUpKernel(() => ++asked > 2), false);
  assertEquals(asked, 3);
  // Never told: every step runs.
  assertEquals(await warmUpKernel(() => false), true);
});

Deno.test("the warm-up Turn completes every time a pooled Worker runs it, nothing carried over", async () => {
  const results: boolean[] = [];
  for (let i = 0; i < WORKER_WARM_UP_TURNS; i++) results.push(await warmUpKernel());
  assertEquals(results, Array(WORKER_WARM_UP_TURNS).fill(true));
});
