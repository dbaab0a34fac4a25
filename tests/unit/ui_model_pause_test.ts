/** [#18] The composer's circuit countdown: from the newest Turn's end, CIRCUIT_OPEN_MS long. */
import { assertEquals } from "../helpers/assert.ts";
import { CIRCUIT_OPEN_MS as SERVER_OPEN_MS } from "../../runtime/limits.ts";
import { CIRCUIT_OPEN_MS, pausedUntil, secondsLeft } from "../../ui/lib/model_pause.ts";

Deno.test("the UI's circuit pause equals the server's", () => {
  assertEquals(CIRCUIT_OPEN_MS, SERVER_OPEN_MS);
});

Deno.test("only the newest ended Turn decides, and the countdown rounds up to zero", () => {
  const paused = { code: "model_temporarily_unhealthy", finishedAt: 1000 };
  assertEquals(pausedUntil([paused]), 1000 + CIRCUIT_OPEN_MS);
  assertEquals(pausedUntil([paused, { code: null, finishedAt: 2000 }]), null, "a later success");
  assertEquals(pausedUntil([paused, { code: null, finishedAt: null }]), 1000 + CIRCUIT_OPEN_MS);
  assertEquals(secondsLeft(31_000, 1_001), 30);
  assertEquals(secondsLeft(31_000, 30_999), 1);
  assertEquals(secondsLeft(31_000, 31_000), 0);
  assertEquals(secondsLeft(null, 0), 0);
});
