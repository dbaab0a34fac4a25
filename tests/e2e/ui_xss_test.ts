/**
 * [UI-2] hostile text stays inert in real Chromium: a user message and an
 * assistant answer full of HTML, script, event handlers, javascript: links and
 * remote images. Breach = any script runs (a window flag is set), any element
 * of a forbidden kind appears in the chat, or any request reaches the
 * loopback "tracker" that the payloads point at.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

Deno.test("XSS payloads in user and assistant text stay inert: no script runs and nothing loads", async () => {
  let trackerHits = 0;
  const tracker = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    trackerHits++;
    return new Response("x");
  });
  const t = `http://127.0.0.1:${tracker.addr.port}`;
  const userPayload = `<img src="${t}/u.png" onerror="window.__xss='user-img'">` +
    `<script>window.__xss='user-script'</script>` +
    `<svg onload="window.__xss='user-svg'"></svg> ![u](${t}/u-md.png)`;
  const answer = [
    `Inline <img src="${t}/a.png" onerror="window.__xss='a-img'"> html`,
    "",
    `<script>window.__xss='a-script'</script>`,
    "",
    `<iframe src="${t}/frame"></iframe>`,
    "",
    `![pixel](${t}/pixel.png)`,
    "",
    `[click me](javascript:window.__xss='a-js-link')`,
    "",
    `<a href="javascript:window.__xss='a-raw-link'">raw link</a>`,
    "",
    `[with creds](https://user:pw@example.org/)`,
    "",
    `[fine](https://example.org/ok)`,
    "",
    `<style>body{background:url(${t}/css.png)}</style>`,
  ].join("\n");
  const env = await startUiEnv();
  try {
    const { page } = await openLoggedIn(env);
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    await createAgent(page, "XSS target");
    await createConversation(page);
    env.ollama.enqueue(text(answer, { frameDelayMs: 25 }));
    await send(page, userPayload);
    // Live deltas render as Markdown too [UI-2 revised, #18]: through the same sanitizer, so the
    // streaming view holds no markup of these kinds either (checked once a payload is on screen).
    const liveSeen = await (await page.waitForFunction(
      () => {
        const live = document.querySelector(
          "[data-testid=turn][data-state=running] [data-testid=live-markdown]",
        );
        if (live && (live.textContent ?? "").includes("raw link")) {
          return live.querySelectorAll(
              "img, script, svg, iframe, style, object, embed, [onerror], [style]",
            )
              .length === 0
            ? "clean"
            : "dirty";
        }
        return document.querySelector("[data-testid=turn][data-state=completed]") ? "missed" : null;
      },
      undefined,
      { timeout: 30_000 },
    )).jsonValue();
    assert(liveSeen !== "dirty", "the live view stays inert");
    await waitForCompletedTurn(page);
    // Give any smuggled loader a chance to fire.
    await page.waitForTimeout(300);

    assertEquals(
      await page.evaluate(() => (window as unknown as { __xss?: string }).__xss),
      undefined,
    );
    const chat = "[data-testid=chat-scroll]";
    // The app's own icons are SVG; no message content may contain any markup of these kinds.
    const content = ["[data-testid=user-message]", "[data-testid=assistant-markdown]"];
    for (const tag of ["img", "script", "svg", "iframe", "style", "object", "embed"]) {
      const sel = content.map((c) => `${c} ${tag}`).join(", ");
      assertEquals(await page.$$eval(sel, (e) => e.length), 0, `no <${tag}> in a message`);
    }
    for (const tag of ["img", "script", "iframe", "style", "object", "embed"]) {
      assertEquals(
        await page.$$eval(`${chat} ${tag}`, (e) => e.length),
        0,
        `no <${tag}> in the chat`,
      );
    }
    assertEquals(
      await page.$$eval(`${chat} [onerror], ${chat} [onload], ${chat} [style]`, (e) => e.length),
      0,
    );
    // The user's text is shown literally.
    assertEquals(await page.textContent("[data-testid=user-message]"), userPayload);
    // The assistant's raw HTML is shown as text, not interpreted.
    const md = (await page.textContent("[data-testid=assistant-markdown]")) ?? "";
    assert(md.includes("<script>window.__xss='a-script'</script>"), md);
    // Only the one safe link is a link, with the fixed rel; unsafe ones are plain text.
    const links = await page.$$eval(
      `${chat} a`,
      (as) => as.map((a) => [a.getAttribute("href"), a.getAttribute("rel"), a.textContent]),
    );
    assertEquals(links, [["https://example.org/ok", "noopener noreferrer nofollow", "fine"]]);
    await page.click("text=click me");
    await page.waitForTimeout(100);
    assertEquals(
      await page.evaluate(() => (window as unknown as { __xss?: string }).__xss),
      undefined,
    );
    assertEquals(trackerHits, 0, "nothing reached the tracker");
    assertEquals(requested.filter((u) => u.startsWith(t)), []);
  } finally {
    await env.close();
    await tracker.shutdown();
  }
});
