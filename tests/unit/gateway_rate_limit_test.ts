/** Per-source login failure limit [GW-3]: 5 failures per 60 s window, then 429 + Retry-After. */
import { createLoginLimiter } from "../../runtime/http/rate_limit.ts";
import {
  LOGIN_FAILURE_WINDOW_MS,
  LOGIN_FAILURES_PER_WINDOW,
  LOGIN_SOURCES_TRACKED,
} from "../../runtime/limits.ts";
import { assertEquals } from "../helpers/assert.ts";

function clock() {
  let t = 5_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

Deno.test("a source may fail LOGIN_FAILURES_PER_WINDOW times before it is blocked", () => {
  const c = clock();
  const l = createLoginLimiter({ now: c.now });
  for (let i = 0; i < LOGIN_FAILURES_PER_WINDOW; i++) {
    assertEquals(l.retryAfter("10.0.0.1"), 0, `attempt ${i + 1} allowed`);
    l.recordFailure("10.0.0.1");
  }
  assertEquals(l.retryAfter("10.0.0.1"), LOGIN_FAILURE_WINDOW_MS / 1000);
  assertEquals(l.retryAfter("10.0.0.2"), 0, "other sources are unaffected");
});

Deno.test("Retry-After counts down to the end of the window, then the source may try again", () => {
  const c = clock();
  const l = createLoginLimiter({ now: c.now });
  for (let i = 0; i < LOGIN_FAILURES_PER_WINDOW; i++) l.recordFailure("s");
  c.advance(LOGIN_FAILURE_WINDOW_MS - 1500);
  assertEquals(l.retryAfter("s"), 2);
  c.advance(1499);
  assertEquals(l.retryAfter("s"), 1, "never 0 while blocked");
  c.advance(1);
  assertEquals(l.retryAfter("s"), 0);
});

Deno.test("a success clears the source's failures", () => {
  const l = createLoginLimiter();
  for (let i = 0; i < LOGIN_FAILURES_PER_WINDOW - 1; i++) l.recordFailure("s");
  l.recordSuccess("s");
  for (let i = 0; i < LOGIN_FAILURES_PER_WINDOW - 1; i++) l.recordFailure("s");
  assertEquals(l.retryAfter("s"), 0);
});

Deno.test("at most LOGIN_SOURCES_TRACKED sources are kept, oldest dropped first", () => {
  const c = clock();
  const l = createLoginLimiter({ now: c.now });
  for (let i = 0; i < LOGIN_SOURCES_TRACKED + 10; i++) {
    l.recordFailure(`src-${i}`);
    c.advance(1);
  }
  assertEquals(l.size(), LOGIN_SOURCES_TRACKED);
  for (let i = 0; i < LOGIN_FAILURES_PER_WINDOW; i++) l.recordFailure("src-last");
  assertEquals(l.retryAfter("src-last") > 0, true);
});
