/**
 * Real Chromium for browser tests: Debian's /usr/bin/chromium driven by
 * playwright-core, with the flags this workplace requires (no background
 * networking, no sandbox as root, a fresh profile per launch).
 */
import { chromium } from "playwright-core";
import type { Browser, BrowserContext, Page } from "playwright-core";

export type { Browser, BrowserContext, Page };

export const CHROMIUM_PATH = "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

/** Directory for screenshots (git-ignored). */
export function screenshotDir(): string {
  const dir = new URL("../../test-artifacts/screenshots/", import.meta.url).pathname;
  Deno.mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Chromium logs every non-2xx fetch as a console error. A 401 is the gateway's
 * normal "not logged in" answer (the app then shows its login page), so it is
 * not counted; every other HTTP error still is.
 */
const EXPECTED_401 = /^Failed to load resource: the server responded with a status of 401 /;

/** Collects page errors and console errors so tests can assert none happened. */
export function watchPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !EXPECTED_401.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  return errors;
}
