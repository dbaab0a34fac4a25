/** How a Run that did not complete on its own ends [CV-2, EV-1]. */
import { assertEquals } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  abortedTerminal,
  cancelFrameReason,
  crashTerminal,
  errorTerminal,
} from "../../runtime/runs/run_terminal.ts";
import type { Terminal } from "../../runtime/runs/run_recorder.ts";

Deno.test("a deadline fails the Run at the model stage; every other abort cancels it", () => {
  assertEquals(abortedTerminal("deadline"), {
    state: "failed",
    code: "model_turn_deadline",
    stage: "model",
  });
  for (const r of ["user", "shutdown", "agent_upgrade", "agent_delete"] as const) {
    assertEquals(abortedTerminal(r), { state: "cancelled", reason: r });
  }
});

Deno.test("the Worker hears user, deadline or shutdown, never an Agent transition", () => {
  assertEquals(cancelFrameReason("user"), "user");
  assertEquals(cancelFrameReason("deadline"), "deadline");
  assertEquals(cancelFrameReason("agent_upgrade"), "shutdown");
  assertEquals(cancelFrameReason("agent_delete"), "shutdown");
  assertEquals(cancelFrameReason(null), "shutdown");
});

Deno.test("errors map to a fixed code and stage; an aborted Run stays cancelled", () => {
  assertEquals(errorTerminal(new AppError("sandbox_unavailable"), null), {
    state: "failed",
    code: "sandbox_unavailable",
    stage: "sandbox",
  });
  assertEquals(errorTerminal(new AppError("run_event_limit"), null), {
    state: "failed",
    code: "run_event_limit",
    stage: "journal",
  });
  assertEquals(errorTerminal(new AppError("worker_protocol_error"), null), {
    state: "failed",
    code: "worker_protocol_error",
    stage: "worker",
  });
  assertEquals(errorTerminal(new TypeError("boom"), null), {
    state: "failed",
    code: "internal_error",
    stage: "worker",
  });
  assertEquals(errorTerminal(new AppError("worker_protocol_error"), "user"), {
    state: "cancelled",
    reason: "user",
  });
  // A deadline is not a cancel: the error that surfaced is reported.
  assertEquals(errorTerminal(new AppError("worker_protocol_error"), "deadline"), {
    state: "failed",
    code: "worker_protocol_error",
    stage: "worker",
  });
});

Deno.test("a Worker killed for a resource bound names it; any other end stays worker_crashed", async () => {
  const crashed: Terminal = { state: "failed", code: "worker_crashed", stage: "worker" };
  const exit = (reason: "tree_limit" | "exited", errorCode: "worker_resource_limit" | null) =>
    Promise.resolve({ code: null, signal: "SIGKILL", reason, errorCode });
  assertEquals(await crashTerminal(exit("tree_limit", "worker_resource_limit"), crashed, 1000), {
    state: "failed",
    code: "worker_resource_limit",
    stage: "worker",
  });
  assertEquals(await crashTerminal(exit("exited", null), crashed, 1000), crashed);
  // A Worker that closed its output but never exits: the wait is bounded by the grace.
  const t0 = Date.now();
  assertEquals(await crashTerminal(new Promise(() => {}), crashed, 50), crashed);
  assertEquals(Date.now() - t0 < 5000, true);
});
