/**
 * [UI-5] Agent and Conversation management in the browser: the system Agent
 * is protected, an Agent is created, renamed, rebuilt and deleted with
 * confirmations; a Conversation is renamed, branched and deleted from a
 * popover menu that lies fully inside the viewport (never clipped by the list);
 * each Conversation keeps its own draft when switching.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { login } from "../helpers/login.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import type { Page } from "../helpers/browser.ts";
import {
  createAgent,
  createConversation,
  expectDraft,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

async function confirmDialog(page: Page, value?: string) {
  await page.waitForSelector("dialog[open]");
  if (value !== undefined) await page.fill("[data-testid=dialog-input]", value);
  await page.click("[data-testid=dialog-confirm]");
  await page.waitForSelector("dialog[open]", { state: "detached" });
}

async function openMenu(page: Page, index: number) {
  const items = await page.$$("[data-testid=conversation-item]");
  await items[index].hover();
  await (await page.$$("[data-testid=conversation-menu]"))[index].click();
  await page.waitForSelector("[data-testid=conversation-popover]:popover-open");
  const box = await page.$eval("[data-testid=conversation-popover]", (el) => {
    const r = el.getBoundingClientRect();
    return {
      inside: r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth,
    };
  });
  assert(box.inside, "the menu lies fully inside the viewport");
}

function titles(page: Page) {
  return page.$$eval(
    "[data-testid=conversation-item] .conv-title",
    (e) => e.map((x) => x.textContent),
  );
}

Deno.test("agents and conversations are managed through dialogs and an unclipped popover", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    // The system Agent is selected first on a fresh home and is protected.
    await page.waitForSelector("[data-testid=agent-switcher] option", { state: "attached" });
    assertEquals(await page.isDisabled("[data-testid=delete-agent]"), true);

    await createAgent(page, "Alpha");
    assertEquals(await page.isDisabled("[data-testid=delete-agent]"), false);
    await page.click("text=Rename >> nth=0");
    await confirmDialog(page, "Alpha renamed");
    await page.waitForFunction(() =>
      document.querySelector<HTMLSelectElement>("[data-testid=agent-switcher]")?.selectedOptions[0]
        ?.textContent === "Alpha renamed"
    );
    await page.click("text=Rebuild");
    await confirmDialog(page);
    await page.waitForSelector("text=generation 2");

    // Two conversations; drafts are kept per conversation.
    await createConversation(page);
    // Long enough that this Conversation's context projection differs from an empty one's.
    env.ollama.enqueue(text(`First answer. ${"More words here. ".repeat(120)}`));
    await send(page, "first question");
    await waitForCompletedTurn(page);
    await page.fill("[data-testid=composer-input]", "draft for one");
    await page.click("[data-testid=new-conversation]");
    await page.waitForSelector("[data-testid=empty-chat]");
    await page.fill("[data-testid=composer-input]", "draft for two");
    const items = await page.$$("[data-testid=conversation-item]");
    assertEquals(items.length, 2);
    await items[1].click(); // older one (list is newest first)
    await page.waitForSelector("[data-testid=turn]");
    await expectDraft(page, "draft for one");
    const placeOne = await page.evaluate(() => location.hash);
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=empty-chat]");
    await expectDraft(page, "draft for two");

    // A late context projection of the Conversation left behind never lands on the one open now.
    const twoId = (await page.evaluate(() => location.hash)).split("/c/")[1];
    const meterText = () => page.textContent("[data-testid=context-meter]");
    // The background tokenizer check changes how the figures are counted once it settles: let it
    // settle first, so the comparison below sees only the Conversation switch.
    await page.waitForFunction(
      async () => {
        const [, agent, conv] = /#\/a\/([^/]+)\/c\/([^/]+)/.exec(location.hash) ?? [];
        const r = await fetch(`/api/agents/${agent}/sessions/${conv}/context-preview`);
        const p = await r.json();
        return p.available === true && p.counting.reason !== "tokenizer_verifying";
      },
      undefined,
      { polling: 200, timeout: 60_000 },
    );
    await page.waitForSelector("[data-testid=context-meter] >> text=/% left/");
    const twoMeter = await meterText();
    await page.route("**/context-preview*", async (route) => {
      if (!route.request().url().includes(twoId)) await new Promise((r) => setTimeout(r, 3000));
      await route.continue();
    });
    const late = page.waitForResponse((r) =>
      r.url().includes("/context-preview") && !r.url().includes(twoId)
    );
    const twoAgain = page.waitForResponse((r) =>
      r.url().includes("/context-preview") && r.url().includes(twoId)
    );
    await (await page.$$("[data-testid=conversation-item]"))[1].click();
    await page.waitForSelector("[data-testid=turn]");
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=empty-chat]");
    // The meter must show Conversation two's own projection, the one the UI fetched for it on
    // the way back (the figures can move between fetches, so no earlier text is compared).
    const twoFree = (await (await twoAgain).json()).meter.free_percent as number;
    const shown = () =>
      page.evaluate(() =>
        Number(
          /(\d+)% left/.exec(
            document.querySelector("[data-testid=context-meter]")?.textContent ?? "",
          )?.[1],
        )
      );
    await page.waitForFunction(
      (want) =>
        Number(
          /(\d+)% left/.exec(
            document.querySelector("[data-testid=context-meter]")?.textContent ?? "",
          )?.[1],
        ) === want,
      twoFree,
    );
    await late;
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
    assertEquals(await shown(), twoFree, `the open Conversation's own projection`);
    await page.unroute("**/context-preview*");
    await (await page.$$("[data-testid=conversation-item]"))[1].click();
    await page.waitForFunction(
      (t) =>
        /% left/.test(document.querySelector("[data-testid=context-meter]")?.textContent ?? "") &&
        document.querySelector("[data-testid=context-meter]")?.textContent !== t,
      twoMeter,
    );
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=empty-chat]");

    // A place pasted into the address bar opens it: another Agent, then back to a Conversation.
    await page.evaluate(() => (location.hash = "#/a/00000000-0000-4000-8000-000000000001"));
    await page.waitForFunction(() =>
      document.querySelector<HTMLSelectElement>("[data-testid=agent-switcher]")?.selectedOptions[0]
        ?.textContent === "System Agent (system)"
    );
    await page.evaluate((h) => (location.hash = h), placeOne);
    await page.waitForFunction(
      (h) =>
        location.hash === h &&
        document.querySelector("[data-testid=user-message]")?.textContent === "first question",
      placeOne,
    );
    await expectDraft(page, "draft for one");
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=empty-chat]");
    await page.evaluate((h) => (location.hash = h), placeOne);
    await page.waitForSelector("[data-testid=user-message] >> text=first question");
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=empty-chat]");

    // Rename from the popover.
    await openMenu(page, 0);
    await page.click("[data-testid=conversation-popover] >> text=Rename");
    await confirmDialog(page, "Renamed chat");
    await page.waitForFunction(() =>
      [...document.querySelectorAll("[data-testid=conversation-item] .conv-title")]
        .some((e) => e.textContent === "Renamed chat")
    );

    // Branch the conversation that has a completed head.
    const before = (await titles(page)).length;
    const idx = (await titles(page)).findIndex((t) => t !== "Renamed chat");
    await openMenu(page, idx);
    await page.click("[data-testid=conversation-popover] >> text=Branch from here");
    await page.waitForFunction(
      (n) => document.querySelectorAll("[data-testid=conversation-item]").length === n + 1,
      before,
    );
    assert((await titles(page)).some((t) => t?.endsWith("(branch)")), "a branch appears");

    // Delete one conversation with confirmation.
    await openMenu(page, 0);
    await page.click("[data-testid=menu-delete]");
    await confirmDialog(page);
    await page.waitForFunction(
      (n) => document.querySelectorAll("[data-testid=conversation-item]").length === n,
      before,
    );

    // Delete the agent; the switcher falls back to another agent.
    await page.click("[data-testid=delete-agent]");
    await confirmDialog(page);
    await page.waitForFunction(() =>
      ![...document.querySelectorAll("[data-testid=agent-switcher] option")]
        .some((o) => o.textContent?.startsWith("Alpha"))
    );
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("with many conversations the open one is scrolled into view in the list", async () => {
  const env = await startUiEnv();
  try {
    const s = await login(env.server);
    const sys = "00000000-0000-4000-8000-000000000001";
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await fetch(`${env.server.url}/api/agents/${sys}/sessions`, {
        method: "POST",
        headers: s.headers(),
        body: JSON.stringify({ title: `Conversation ${i}` }),
      });
      assertEquals(r.status, 201);
      ids.push((await r.json()).session.id);
    }
    const { page, errors } = await openLoggedIn(env);
    // The oldest one (last in the newest-first list), opened from its address.
    const place = `#/a/${sys}/c/${ids[0]}`;
    await page.evaluate((h) => (location.hash = h), place);
    // The first page has settled on that place (it opened the newest Conversation on load and
    // could otherwise still be writing that one's address when the reload below happens).
    await page.waitForFunction(
      (h) =>
        location.hash === h &&
        document.querySelector(".conv-item.active .conv-title")?.textContent === "Conversation 0",
      place,
    );
    // While the reloaded page still waits for its Agents, the address keeps the place asked for
    // (a second reload then still opens it).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route("**/api/agents", async (route) => {
      await held;
      await route.continue();
    });
    const listing = page.waitForRequest("**/api/agents");
    await page.reload();
    await listing;
    assertEquals(await page.evaluate(() => location.hash), place);
    release(); // later Agent listings pass at once
    await page.waitForSelector("[data-testid=user-message], [data-testid=empty-chat]");
    await page.waitForFunction(
      () => {
        const list = document.querySelector("[data-testid=conversation-list]")!;
        const item = list.querySelector(".conv-item.active");
        if (!item || list.scrollHeight <= list.clientHeight) return false;
        const l = list.getBoundingClientRect();
        const r = item.getBoundingClientRect();
        return r.top >= l.top - 1 && r.bottom <= l.bottom + 1;
      },
      undefined,
      { timeout: 10_000 },
    );
    assertEquals(
      await page.textContent(".conv-item.active .conv-title"),
      "Conversation 0",
    );
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("a conversation deleted elsewhere is dropped when opened, never left Loading", async () => {
  const env = await startUiEnv();
  try {
    const s = await login(env.server);
    const sys = "00000000-0000-4000-8000-000000000001";
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${env.server.url}/api/agents/${sys}/sessions${path}`, {
        method,
        headers: s.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    await (await api("POST", "", { title: "Keep" })).body?.cancel();
    const gone = (await (await api("POST", "", { title: "Gone" })).json()).session.id;
    const { page, errors } = await openLoggedIn(env);
    await page.waitForFunction(() =>
      document.querySelector("[data-testid=conversation-title]")?.textContent === "Gone"
    );
    await (await page.$$("[data-testid=conversation-item]"))[1].click();
    await page.waitForFunction(() =>
      document.querySelector("[data-testid=conversation-title]")?.textContent === "Keep"
    );
    // Another tab deletes "Gone"; this page's list still shows it and the operator opens it.
    const del = await api("DELETE", `/${gone}`);
    assertEquals(del.ok, true);
    await del.body?.cancel();
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=error-toast] >> text=conversation_not_found");
    await page.waitForFunction(() =>
      document.querySelectorAll("[data-testid=conversation-item]").length === 1 &&
      document.querySelector("[data-testid=conversation-title]")?.textContent === "Keep" &&
      document.querySelector("[data-testid=empty-chat]") !== null
    );
    assertEquals(await page.$("[data-testid=chat-loading]"), null);
    assertEquals(errors.filter((e) => !/status of 404/.test(e)), []);
  } finally {
    await env.close();
  }
});

Deno.test("a conversation list that answers after the operator navigated never rewrites the address", async () => {
  const env = await startUiEnv();
  try {
    const s = await login(env.server);
    const sys = "00000000-0000-4000-8000-000000000001";
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${env.server.url}/api/agents/${sys}/sessions`, {
        method: "POST",
        headers: s.headers(),
        body: JSON.stringify({ title: `Conversation ${i}` }),
      });
      assertEquals(r.status, 201);
      ids.push((await r.json()).session.id);
    }
    const { page, errors } = await openLoggedIn(env);
    await page.waitForSelector(".conv-item.active");
    // The reloaded page's first listing (asked before the navigation) and the navigation's own
    // listing are both held, so the stale one can answer first: the race of a loaded machine.
    const deferred = () => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    };
    const arrived = [deferred(), deferred()];
    const gates = [deferred(), deferred()];
    let n = 0;
    await page.route(`**/api/agents/${sys}/sessions`, async (route) => {
      const k = route.request().method() === "GET" ? n++ : -1;
      if (k >= 0 && k < 2) {
        arrived[k].resolve();
        await gates[k].promise;
      }
      await route.continue();
    });
    await page.evaluate((h) => (location.hash = h), `#/a/${sys}`);
    await page.reload();
    await arrived[0].promise;
    const place = `#/a/${sys}/c/${ids[0]}`;
    await page.evaluate((h) => (location.hash = h), place);
    await arrived[1].promise;
    const stale = page.waitForResponse((r) =>
      r.url().endsWith(`/api/agents/${sys}/sessions`) && r.request().method() === "GET"
    );
    gates[0].resolve(); // the stale listing answers while the navigation's is still on its way
    await stale;
    await page.evaluate(() =>
      new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))
    );
    assertEquals(await page.evaluate(() => location.hash), place);
    gates[1].resolve();
    await page.waitForFunction(
      (t) => document.querySelector(".conv-item.active .conv-title")?.textContent === t,
      "Conversation 0",
    );
    assertEquals(await page.evaluate(() => location.hash), place);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
