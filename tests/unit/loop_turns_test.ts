/**
 * [PF-2] `nextLoopTurn()` resumes its waiters one per macrotask, in arrival order: a section
 * that runs after one waiter resumed (with every microtask it queues) finishes before the next
 * waiter resumes.
 */
import { nextLoopTurn } from "../../runtime/loop_turns.ts";
import { assertEquals } from "../helpers/assert.ts";

Deno.test("waiters resume in arrival order, each on its own macrotask", async () => {
  const order: string[] = [];
  const waiter = (name: string) =>
    nextLoopTurn().then(async () => {
      order.push(`${name} resumed`);
      // Microtasks of this section: every other waiter would run inside them if the gate
      // released more than one per macrotask.
      for (let i = 0; i < 10; i++) await Promise.resolve();
      order.push(`${name} done`);
    });
  await Promise.all([waiter("a"), waiter("b"), waiter("c")]);
  assertEquals(order, ["a resumed", "a done", "b resumed", "b done", "c resumed", "c done"]);
});

Deno.test("a waiter that arrives while others wait queues behind them; the gate then idles", async () => {
  const order: string[] = [];
  const first = nextLoopTurn().then(() => {
    order.push("first");
    // Arrives during the first section: behind the second, which was already waiting.
    return nextLoopTurn().then(() => order.push("third"));
  });
  const second = nextLoopTurn().then(() => order.push("second"));
  await Promise.all([first, second]);
  assertEquals(order, ["first", "second", "third"]);
  // Idle again: a later waiter still resumes.
  await nextLoopTurn();
});
