/** Session store [GW-3]: capacity cap (LRU eviction), idle and absolute lifetime, bound CSRF. */
import { createSessionStore, csrfEqual, randomSecret } from "../../runtime/http/sessions.ts";
import { SESSION_ABSOLUTE_MS, SESSION_CAPACITY, SESSION_IDLE_MS } from "../../runtime/limits.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

Deno.test("a created session is found by its secret and carries its own CSRF token", () => {
  const store = createSessionStore();
  const a = store.create();
  const b = store.create();
  assertEquals(store.touch(a.secret)?.id, a.session.id);
  assert(a.session.csrf !== b.session.csrf, "each session has its own CSRF token");
  assert(a.session.id !== a.secret, "the store key is not the cookie secret");
  assertEquals(a.session.id, store.get(a.session.id)?.id);
});

Deno.test("the store holds at most SESSION_CAPACITY sessions and evicts the least recently used", () => {
  const c = clock();
  const store = createSessionStore({ now: c.now });
  const made = [];
  for (let i = 0; i < SESSION_CAPACITY; i++) {
    made.push(store.create());
    c.advance(1);
  }
  assertEquals(store.size(), SESSION_CAPACITY);
  store.touch(made[0].secret); // the oldest is now the most recently used
  const extra = store.create();
  assertEquals(store.size(), SESSION_CAPACITY);
  assert(store.touch(made[0].secret) !== null, "recently used survives");
  assertEquals(store.touch(made[1].secret), null, "least recently used was evicted");
  assert(made[1].session.ended.aborted, "eviction fires the ended signal");
  assert(store.touch(extra.secret) !== null);
});

Deno.test("a session idle for SESSION_IDLE_MS expires; activity keeps it alive", () => {
  const c = clock();
  const store = createSessionStore({ now: c.now });
  const s = store.create();
  c.advance(SESSION_IDLE_MS - 1);
  assert(store.touch(s.secret) !== null, "still alive just before the idle bound");
  c.advance(SESSION_IDLE_MS - 1);
  assert(store.touch(s.secret) !== null, "touch refreshed the idle clock");
  c.advance(SESSION_IDLE_MS);
  assertEquals(store.touch(s.secret), null);
  assert(s.session.ended.aborted);
  assertEquals(store.size(), 0);
});

Deno.test("a session ends at SESSION_ABSOLUTE_MS however active it is", () => {
  const c = clock();
  const store = createSessionStore({ now: c.now });
  const s = store.create();
  const step = SESSION_IDLE_MS / 2;
  while (c.now() + step < 1_000_000 + SESSION_ABSOLUTE_MS) {
    c.advance(step);
    assert(store.touch(s.secret) !== null);
  }
  assertEquals(store.expiresAt(s.session), 1_000_000 + SESSION_ABSOLUTE_MS);
  c.advance(SESSION_ABSOLUTE_MS);
  assertEquals(store.touch(s.secret), null);
  assertEquals(store.get(s.session.id), null);
});

Deno.test("expiresAt is the earlier of the idle and the absolute end", () => {
  const c = clock(0);
  const store = createSessionStore({ now: c.now });
  const s = store.create();
  assertEquals(store.expiresAt(s.session), SESSION_IDLE_MS);
  while (c.now() < SESSION_ABSOLUTE_MS - SESSION_IDLE_MS / 2) {
    c.advance(SESSION_IDLE_MS / 2);
    assert(store.touch(s.secret) !== null);
  }
  assertEquals(store.expiresAt(s.session), SESSION_ABSOLUTE_MS, "absolute end is nearer");
});

Deno.test("destroy and clear end sessions and fire their signals", () => {
  const store = createSessionStore();
  const a = store.create();
  const b = store.create();
  store.destroy(a.session.id);
  assertEquals(store.touch(a.secret), null);
  assert(a.session.ended.aborted && !b.session.ended.aborted);
  store.clear();
  assert(b.session.ended.aborted);
  assertEquals(store.size(), 0);
});

Deno.test("malformed or unknown cookie secrets find nothing", () => {
  const store = createSessionStore();
  store.create();
  for (const bad of ["", "x", "A".repeat(43), "A".repeat(44), "../../etc/passwd", randomSecret()]) {
    assertEquals(store.touch(bad), null, bad);
  }
});

Deno.test("csrfEqual accepts only the exact token", () => {
  const t = randomSecret();
  assert(csrfEqual(t, t));
  assert(!csrfEqual(t, null));
  assert(!csrfEqual(t, ""));
  assert(!csrfEqual(t, t.slice(0, -1)));
  assert(!csrfEqual(t, t + "A"));
  assert(!csrfEqual(t, randomSecret()));
  assert(!csrfEqual(t, t.toUpperCase() === t ? t.toLowerCase() : t.toUpperCase()));
});

Deno.test("at capacity an expired session is ended before any live one is evicted", () => {
  const c = clock(0);
  const store = createSessionStore({ now: c.now });
  const old = store.create();
  // Kept active until just before its absolute end, so it is the most recently used.
  while (c.now() + SESSION_IDLE_MS / 2 < SESSION_ABSOLUTE_MS - 1_000) {
    c.advance(SESSION_IDLE_MS / 2);
    assert(store.touch(old.secret) !== null);
  }
  c.advance(SESSION_ABSOLUTE_MS - 1_000 - c.now());
  const live = Array.from({ length: SESSION_CAPACITY - 1 }, () => store.create());
  c.advance(999);
  assert(store.touch(old.secret) !== null, "still alive 1 ms before its absolute end");
  c.advance(1);
  assertEquals(store.size(), SESSION_CAPACITY);
  store.create();
  assert(old.session.ended.aborted, "the expired session was ended");
  for (const s of live) assert(store.touch(s.secret) !== null, "no live session was evicted");
  assertEquals(store.size(), SESSION_CAPACITY);
});
