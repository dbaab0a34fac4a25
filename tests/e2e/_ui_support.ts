/**
 * Shared set-up for the UI browser tests: the scripted Ollama (in this test
 * process), the real server as a child process pointed at it with --ollama,
 * real Chromium, and helpers that drive the UI the way an operator does
 * (login through the page, create an Agent and a Conversation, send).
 */
import {
  type Browser,
  launchBrowser,
  type Page,
  screenshotDir,
  watchPageErrors,
} from "../helpers/browser.ts";
import { readBootstrapToken } from "../helpers/login.ts";
import { type ServerHandle, startTestServer } from "../helpers/server.ts";
import {
  type FakeOllama,
  type FakeOllamaOptions,
  type ScriptSource,
  startFakeOllama,
} from "../../tools/fake_ollama/server.ts";

export interface UiEnv {
  server: ServerHandle;
  ollama: FakeOllama;
  browser: Browser;
  close(): Promise<void>;
}

export async function startUiEnv(
  defaultScript?: ScriptSource,
  ollamaOpts: Omit<FakeOllamaOptions, "defaultScript"> = {},
): Promise<UiEnv> {
  const ollama = await startFakeOllama(
    defaultScript ? { ...ollamaOpts, defaultScript } : ollamaOpts,
  );
  const server = await startTestServer({ args: ["--ollama", ollama.url] });
  const browser = await launchBrowser();
  return {
    server,
    ollama,
    browser,
    async close() {
      await browser.close();
      await server.stop();
      await ollama.close();
    },
  };
}

export interface OpenPage {
  page: Page;
  errors: string[];
}

/** Opens the app at `viewport` and logs in through the login page. */
export async function openLoggedIn(
  env: UiEnv,
  viewport = { width: 1440, height: 900 },
): Promise<OpenPage> {
  const ctx = await env.browser.newContext({ viewport, permissions: [] });
  const page = await ctx.newPage();
  const errors = watchPageErrors(page);
  await page.goto(`${env.server.url}/`);
  await page.fill("[data-testid=login-token]", readBootstrapToken(env.server.home));
  await page.click("[data-testid=login-submit]");
  await page.waitForSelector("[data-testid=workspace]", { timeout: 10_000 });
  return { page, errors };
}

/** On narrow screens the navigation is an overlay: open it when it is off-screen. */
export async function ensureNav(page: Page): Promise<void> {
  const narrow = await page.evaluate(() => innerWidth <= 900);
  if (!narrow) return;
  const open = await page.$(".workspace.nav-open");
  if (!open) await page.click("[data-testid=open-nav]");
  await page.waitForSelector(".workspace.nav-open");
  await settled(page); // the slide-in transition has ended
}

/**
 * Waits for a state, not a delay: no finite CSS transition or animation is
 * running any more (theme switches, slides, relayout), and two frames have
 * painted since. Endless animations (spinners) are not waited for.
 */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      document.getAnimations().every((a) =>
        a.playState !== "running" || a.effect?.getComputedTiming().iterations === Infinity
      ),
    undefined,
    { timeout: 10_000 },
  );
  await page.evaluate(() =>
    new Promise<void>((done) => requestAnimationFrame(() => requestAnimationFrame(() => done())))
  );
}

/** Creates an Agent through the dialog and waits until it is selected. */
export async function createAgent(page: Page, name: string): Promise<void> {
  await ensureNav(page);
  await page.click("[data-testid=new-agent]");
  await page.fill("[data-testid=dialog-input]", name);
  await page.click("[data-testid=dialog-confirm]");
  await page.waitForFunction(
    (n) => {
      const sel = document.querySelector<HTMLSelectElement>("[data-testid=agent-switcher]");
      return sel?.selectedOptions[0]?.textContent === n;
    },
    name,
    { timeout: 10_000 },
  );
}

/**
 * Creates a Conversation and waits until it is the open one (its id in the address) with its
 * empty chat; another empty Conversation already on screen does not count.
 */
export async function createConversation(page: Page): Promise<void> {
  const before = await page.evaluate(() => location.hash);
  const empty = await page.$("[data-testid=empty-new-conversation]");
  if (empty) await empty.click();
  else {
    await ensureNav(page);
    await page.click("[data-testid=new-conversation]");
  }
  await page.waitForFunction(
    (b) => /\/c\/[^/]+$/.test(location.hash) && location.hash !== b,
    before,
    { timeout: 10_000 },
  );
  await page.waitForSelector("[data-testid=empty-chat]", { timeout: 10_000 });
}

/** Types a message and presses Enter. */
export async function send(page: Page, text: string): Promise<void> {
  await page.fill("[data-testid=composer-input]", text);
  await page.press("[data-testid=composer-input]", "Enter");
}

/** Waits (bounded) until the composer shows `want`; fails with the value it shows. */
export async function expectDraft(page: Page, want: string, msg?: string): Promise<void> {
  const sel = "[data-testid=composer-input]";
  await page.waitForFunction(
    ([s, w]) => document.querySelector<HTMLTextAreaElement>(s!)?.value === w,
    [sel, want],
    { timeout: 10_000 },
  ).catch(() => {});
  const got = await page.inputValue(sel);
  if (got !== want) {
    throw new Error(
      `${msg ?? "composer draft"}: want ${JSON.stringify(want)}, got ${JSON.stringify(got)}`,
    );
  }
}

/** Number of Turns the server holds for the open conversation (through the API, same cookie). */
export async function turnCount(page: Page): Promise<number> {
  return await page.evaluate(async () => {
    const m = /^#\/a\/([^/]+)\/c\/([^/]+)$/.exec(location.hash);
    if (!m) return -1;
    const r = await fetch(`/api/agents/${m[1]}/sessions/${m[2]}`);
    const body = await r.json();
    return Array.isArray(body.turns) ? body.turns.length : -1;
  });
}

export { watchPageErrors };

/**
 * Waits until the newest Turn reaches a terminal state and asserts it completed.
 * Fails fast with the Turn's safe summary (code, stage) when it ended otherwise,
 * so a failure under load says why rather than timing out. The bound is
 * generous because CI runs the browser suites in parallel on two cores.
 */
export async function waitForCompletedTurn(page: Page, timeout = 45_000): Promise<void> {
  const handle = await page.waitForFunction(
    () => {
      const turns = document.querySelectorAll("[data-testid=turn]");
      const last = turns[turns.length - 1];
      const state = last?.getAttribute("data-state") ?? "";
      if (!["completed", "failed", "cancelled", "interrupted"].includes(state)) return null;
      return { state, text: (last.textContent ?? "").slice(0, 400) };
    },
    undefined,
    { timeout },
  );
  const last = await handle.jsonValue() as { state: string; text: string };
  if (last.state !== "completed") throw new Error(`the Turn ended ${last.state}: ${last.text}`);
}

/**
 * Screenshots of the page as it is at 1440×900 and 390×844, light and dark, named
 * `<desktop|mobile>-<name>-<light|dark>.png`; the viewport and scheme are restored after.
 */
export async function screenshotsAllSizes(page: Page, name: string): Promise<void> {
  const before = page.viewportSize();
  for (const vp of [{ n: "desktop", w: 1440, h: 900 }, { n: "mobile", w: 390, h: 844 }]) {
    await page.setViewportSize({ width: vp.w, height: vp.h });
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await settled(page); // colour transitions and relayout end before the capture
      await page.screenshot({ path: `${screenshotDir()}${vp.n}-${name}-${scheme}.png` });
    }
  }
  if (before) await page.setViewportSize(before);
  await page.emulateMedia({ colorScheme: "light" });
}
