/**
 * The context meter and its breakdown bar in real Chromium [UI-4, CX-5,
 * CX-8]: the meter reads "≈used / window, N% left" from the server's
 * projection, draws one stacked bar whose segments name their part on hover,
 * opens the breakdown list on a click, and says "calibrated" once the model's
 * own prompt count arrived. Screenshots in light and dark.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { DEFAULT_FAKE_MODELS } from "../../tools/fake_ollama/frames.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  screenshotsAllSizes,
  send,
  settled,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

Deno.test("the context meter shows used of the window, a stacked breakdown bar and the calibrated figure", async () => {
  // Calibration [CX-5] applies to the upper-bound estimate: a model whose vocabulary cannot be
  // verified keeps it for every Turn. (With the bundled Qwen 3 vocabulary the count becomes exact
  // as soon as the check the meter starts has settled, which may be before or after the Turn.)
  const env = await startUiEnv(undefined, {
    models: {
      "qwen3.5:2b": { ...DEFAULT_FAKE_MODELS["qwen3.5:2b"], vocabulary: "none" },
    },
  });
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Meter agent");
    await createConversation(page);
    const meter = "[data-testid=context-meter]";
    await page.waitForSelector(`${meter} >> text=/% left/`);
    assertMatch(
      (await page.textContent(`${meter} .meter-text`))!,
      /^(≈|exact )\d[\d.]*k? \/ 32\.8k, \d+% left$/,
    );

    env.ollama.enqueue(text("A short answer for the meter.", { promptEvalCount: 900 }));
    await send(page, "Fill the history a little");
    await waitForCompletedTurn(page);
    await page.waitForSelector(`${meter} >> text=/calibrated/`);

    // One bar, one segment per non-empty part; each names itself on hover (SVG <title>).
    const parts = await page.$$eval(
      "[data-testid=context-bar] rect.ctx-seg",
      (rs) => rs.map((r) => [r.getAttribute("data-part"), r.querySelector("title")?.textContent]),
    );
    const names = parts.map((p) => p[0]);
    for (const n of ["platform", "environment", "history", "tools", "output_reserve", "free"]) {
      assert(names.includes(n), `${n} in ${names}`);
    }
    assertMatch(parts.find((p) => p[0] === "history")![1]!, /^History: \d[\d.]*k? tokens$/);
    const widths = await page.$$eval(
      "[data-testid=context-bar] rect.ctx-seg",
      (rs) => rs.reduce((a, r) => a + Number(r.getAttribute("width")), 0),
    );
    assert(Math.abs(widths - 1000) < 1, `the segments fill the window: ${widths}`);

    // A click (or tap) opens the parts as a list with the kept/collapsed Turns.
    await page.click(`${meter} .meter-btn`);
    const list = await page.waitForSelector("[data-testid=context-breakdown]");
    const rows = await list.$$eval("li", (ls) => ls.map((l) => l.getAttribute("data-part")));
    assertEquals(rows, [
      "platform",
      "instructions",
      "environment",
      "git",
      "history",
      "tools",
      "current_message",
      "output_reserve",
      "free",
    ]);
    assertMatch(
      (await list.$eval("li[data-part=history]", (l) => l.textContent))!,
      /1 turn kept/,
    );
    // Exact once the background vocabulary check settled, ≈ before (tests/integration covers
    // the switch itself); either way the list says which and that the figure is calibrated.
    assertMatch(
      (await list.textContent())!,
      /(exact \(qwen3, \+2 %\)|≈ upper bound — \w+).*calibrated from 1 usage/,
    );
    assertMatch((await page.textContent(`${meter} .meter-text`))!, /^(exact |≈).* · calibrated$/);
    await settled(page);
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await settled(page);
      await page.locator("[data-testid=composer]").screenshot({
        path: `${screenshotDir()}context-meter-${scheme}.png`,
      });
    }
    await screenshotsAllSizes(page, "context-breakdown");
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
