/**
 * [UI-2, CV-3] durable history pages upward through the server cursor: a
 * Conversation with 33 Turns opens on the latest 32, "Load earlier messages"
 * fetches the older page with the opaque cursor (recovering once when a new
 * Turn has retired that cursor), and the view stays on the message the
 * operator was reading. Opening it shows Loading until the page arrives, never
 * the empty-chat greeting.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { login } from "../helpers/login.ts";
import { TURN_PAGE_DEFAULT } from "../../runtime/limits.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { openLoggedIn, startUiEnv } from "./_ui_support.ts";

const SYS = "00000000-0000-4000-8000-000000000001";

Deno.test("older turns load upward through the server cursor", async () => {
  const env = await startUiEnv(text("ok."));
  try {
    const s = await login(env.server);
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${env.server.url}${path}`, {
        method,
        headers: s.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const conv = (await api("POST", `/api/agents/${SYS}/sessions`, { title: "Long history" }))
      .body.session.id;
    const ask = async (i: number) => {
      // The previous Turn is committed before its Run releases the Conversation:
      // until then a submit is 409 conversation_busy (wait for that state to end).
      let r = { status: 0, body: null as unknown };
      for (let tries = 0; tries < 300; tries++) {
        r = await api("POST", `/api/agents/${SYS}/sessions/${conv}/runs`, {
          message: `question ${i}`,
        });
        if (r.status !== 409) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      assertEquals(r.status, 202, JSON.stringify(r.body));
      for (let tries = 0; tries < 300; tries++) {
        const d = await api("GET", `/api/agents/${SYS}/sessions/${conv}?limit=1`);
        if (d.body.turns[0]?.state === "completed") return;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error("turn did not complete");
    };
    const total = TURN_PAGE_DEFAULT + 1;
    for (let i = 0; i < total; i++) await ask(i);

    const { page, errors } = await openLoggedIn(env);
    // Watch every render from the reload on: the Conversation shows Loading, never a false
    // "Start the conversation" before its Turns arrive.
    await page.addInitScript(() => {
      const seen = { loading: false, empty: false };
      (globalThis as unknown as { __seen: typeof seen }).__seen = seen;
      new MutationObserver(() => {
        seen.loading ||= document.querySelector("[data-testid=chat-loading]") !== null;
        seen.empty ||= document.querySelector("[data-testid=empty-chat]") !== null;
      }).observe(document, { childList: true, subtree: true });
    });
    await page.evaluate((h) => (location.hash = h), `#/a/${SYS}/c/${conv}`);
    await page.reload();
    await page.waitForSelector("[data-testid=load-older]", { timeout: 15_000 });
    assertEquals(
      await page.evaluate(() => (globalThis as unknown as { __seen: unknown }).__seen),
      { loading: true, empty: false },
    );
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), TURN_PAGE_DEFAULT);
    assertEquals(
      await page.textContent("[data-testid=turn] [data-testid=user-message]"),
      "question 1",
    );

    const anchor = await page.$eval("[data-testid=chat-scroll]", (el) => {
      el.scrollTop = 0;
      return document.querySelector("[data-testid=turn]")!.getAttribute("data-turn-id");
    });
    // Another Turn lands behind the page's back: the cursor the page holds may now be stale.
    await ask(total);
    await page.click("[data-testid=load-older]");
    await page.waitForFunction(
      (n) => document.querySelectorAll("[data-testid=turn]").length === n,
      total,
    );
    assertEquals(
      await page.textContent("[data-testid=turn] [data-testid=user-message]"),
      "question 0",
    );
    assertEquals(await page.$("[data-testid=load-older]"), null, "no more pages");
    // The previously first Turn is still in view after the older one was added above it.
    const visible = await page.$eval(
      `[data-turn-id="${anchor}"]`,
      (el) => {
        const r = el.getBoundingClientRect();
        const c = document.querySelector("[data-testid=chat-scroll]")!.getBoundingClientRect();
        return r.top < c.bottom && r.bottom > c.top;
      },
    );
    assert(visible, "the reading position is kept");
    // The stale cursor was refused once (400 invalid_session_cursor) and the UI recovered.
    assertEquals(errors.length, 1);
    assert(/status of 400/.test(errors[0]), errors[0]);
  } finally {
    await env.close();
  }
});
