/**
 * Browser sessions [GW-3]: an in-memory store with a capacity cap, an idle
 * lifetime and an absolute lifetime, and a CSRF token bound to each session.
 *
 * The cookie carries a 256-bit random secret; the store is keyed by its
 * SHA-256 so a lookup never compares the secret itself, and the key (not the
 * secret) is what handlers see as `sessionId`. Sessions live only in memory:
 * a restart or a token rotation ends all of them.
 *
 * SECURITY: at capacity the least recently used session is evicted (only a
 * holder of the token can create sessions, so eviction is not a privilege an
 * outsider has). Every ended session's AbortSignal fires so long-lived
 * responses (SSE) bound to it stop immediately.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { SESSION_ABSOLUTE_MS, SESSION_CAPACITY, SESSION_IDLE_MS } from "../limits.ts";

export interface Session {
  /** Store key: hex SHA-256 of the cookie secret. */
  id: string;
  csrf: string;
  createdAt: number;
  lastSeenAt: number;
  /** Aborted when the session ends (logout, expiry, eviction, rotation). */
  ended: AbortSignal;
}

interface Entry extends Session {
  controller: AbortController;
}

export interface SessionStoreOptions {
  /** @default SESSION_CAPACITY */
  capacity?: number;
  /** @default SESSION_IDLE_MS */
  idleMs?: number;
  /** @default SESSION_ABSOLUTE_MS */
  absoluteMs?: number;
  /** Clock in ms. @default Date.now */
  now?: () => number;
}

export interface SessionStore {
  /** Creates a session; returns the cookie secret (shown once) and the session. */
  create(): { secret: string; session: Session };
  /** A live session by id, without refreshing it. */
  get(id: string): Session | null;
  /** Looks up a cookie secret; expired sessions are ended. Refreshes idle time. */
  touch(secret: string): Session | null;
  /** When the session expires: the earlier of idle and absolute end. */
  expiresAt(session: Session): number;
  destroy(id: string): void;
  /** Ends every session (token rotation). */
  clear(): void;
  size(): number;
}

/** 32 random bytes, base64url without padding (43 chars). */
export function randomSecret(): string {
  const b = crypto.getRandomValues(new Uint8Array(32));
  let s = "";
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

const SECRET_RE = /^[A-Za-z0-9_-]{43}$/;

function keyOf(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Constant-time comparison of two CSRF tokens (fixed length or unequal). */
export function csrfEqual(expected: string, presented: string | null): boolean {
  if (presented === null || !SECRET_RE.test(presented)) return false;
  const a = new TextEncoder().encode(expected);
  const b = new TextEncoder().encode(presented);
  return a.byteLength === b.byteLength && timingSafeEqual(a, b);
}

export function createSessionStore(opts: SessionStoreOptions = {}): SessionStore {
  const capacity = opts.capacity ?? SESSION_CAPACITY;
  const idleMs = opts.idleMs ?? SESSION_IDLE_MS;
  const absoluteMs = opts.absoluteMs ?? SESSION_ABSOLUTE_MS;
  const now = opts.now ?? Date.now;
  // Map iteration order is insertion order; touch() re-inserts, so the first
  // entry is always the least recently used.
  const sessions = new Map<string, Entry>();

  const expiry = (s: Session) => Math.min(s.createdAt + absoluteMs, s.lastSeenAt + idleMs);

  function end(id: string): void {
    const e = sessions.get(id);
    if (!e) return;
    sessions.delete(id);
    e.controller.abort();
  }

  function sweep(t: number): void {
    for (const e of [...sessions.values()]) if (expiry(e) <= t) end(e.id);
  }

  return {
    create() {
      const t = now();
      sweep(t);
      while (sessions.size >= capacity) {
        const oldest = sessions.keys().next().value;
        if (oldest === undefined) break;
        end(oldest);
      }
      const secret = randomSecret();
      const controller = new AbortController();
      const entry: Entry = {
        id: keyOf(secret),
        csrf: randomSecret(),
        createdAt: t,
        lastSeenAt: t,
        ended: controller.signal,
        controller,
      };
      sessions.set(entry.id, entry);
      return { secret, session: entry };
    },
    get(id) {
      const e = sessions.get(id);
      if (!e) return null;
      if (expiry(e) <= now()) {
        end(id);
        return null;
      }
      return e;
    },
    touch(secret) {
      if (!SECRET_RE.test(secret)) return null;
      const id = keyOf(secret);
      const e = sessions.get(id);
      if (!e) return null;
      const t = now();
      if (expiry(e) <= t) {
        end(id);
        return null;
      }
      e.lastSeenAt = t;
      sessions.delete(id);
      sessions.set(id, e);
      return e;
    },
    expiresAt: expiry,
    destroy: end,
    clear() {
      for (const id of [...sessions.keys()]) end(id);
    },
    size: () => sessions.size,
  };
}
