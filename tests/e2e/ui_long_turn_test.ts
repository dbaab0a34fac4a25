/**
 * A long Turn in the browser [SB-8]: while it runs, the Turn shows its
 * progress ("step N · M tools used"), and the Run details timeline puts a
 * "Step N" header over the events of each model call.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import type { FakeToolCall } from "../../tools/fake_ollama/frames.ts";
import { scriptedTools, stall } from "../../tools/fake_ollama/scenarios.ts";
import { createAgent, createConversation, openLoggedIn, send, startUiEnv } from "./_ui_support.ts";

Deno.test("a long running Turn shows step and tools used, and the timeline groups per model call", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Looper");
    await createConversation(page);
    const steps: FakeToolCall[][] = [
      [{ name: "file__glob", arguments: { pattern: "*.a" } }],
      [{ name: "file__glob", arguments: { pattern: "*.b" } }, {
        name: "file__glob",
        arguments: { pattern: "*.c" },
      }],
      [{ name: "file__glob", arguments: { pattern: "*.d" } }],
      [{ name: "file__glob", arguments: { pattern: "*.e" } }],
      [{ name: "file__glob", arguments: { pattern: "*.f" } }],
    ];
    const src = scriptedTools(steps);
    // Five tool steps (six tools), then the sixth model call stalls until stopped.
    env.ollama.enqueue(...steps.map(() => src), stall());
    await send(page, "look around");
    const progress = await page.waitForSelector(
      "[data-testid=turn-progress]:text('step 6 · 6 tools used')",
      { timeout: 30_000 },
    );
    assertEquals(await progress.textContent(), "step 6 · 6 tools used");
    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector(".tl-step-start[data-step='6']", { timeout: 15_000 });
    const headers = await page.$$eval(
      "[data-testid=timeline-event].tl-step-start",
      (els) => els.map((e) => e.getAttribute("data-step")),
    );
    assertEquals(headers, ["1", "2", "3", "4", "5", "6"]);
    const label = await page.$eval(
      ".tl-step-start[data-step='2']",
      (e) => getComputedStyle(e, "::before").content,
    );
    assert(label.includes("Step"), `the step header is drawn: ${label}`);
    await page.click("[data-testid=stop-run]");
    await page.waitForSelector("[data-testid=turn][data-state=cancelled]", { timeout: 15_000 });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
