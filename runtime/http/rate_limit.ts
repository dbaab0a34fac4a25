/**
 * Per-source login failure limit [GW-3]: at most LOGIN_FAILURES_PER_WINDOW
 * failed logins per source address in a fixed window of
 * LOGIN_FAILURE_WINDOW_MS. Once a source reaches the limit, every login from
 * it (even with the right token) is refused with 429 and Retry-After until the
 * window ends, so guessing cannot continue. A successful login clears the
 * source's count.
 *
 * The source is the TCP peer address only (forwarded headers are ignored
 * [GW-1]), reduced by `sourceKey` to what one attacker cannot multiply: every
 * loopback address is ONE source (a local process may bind any of 127/8 as
 * its source address and would otherwise get 5 fresh guesses per address),
 * and an IPv6 peer counts as its /64. At most LOGIN_SOURCES_TRACKED sources
 * are kept; expired entries go first, then the oldest window.
 */
import {
  LOGIN_FAILURE_WINDOW_MS,
  LOGIN_FAILURES_PER_WINDOW,
  LOGIN_SOURCES_TRACKED,
} from "../limits.ts";

export interface LoginLimiterOptions {
  /** @default LOGIN_FAILURES_PER_WINDOW */
  failures?: number;
  /** @default LOGIN_FAILURE_WINDOW_MS */
  windowMs?: number;
  /** @default LOGIN_SOURCES_TRACKED */
  maxSources?: number;
  /** @default Date.now */
  now?: () => number;
}

export interface LoginLimiter {
  /** Seconds to wait when `source` is blocked, or 0 when it may try. */
  retryAfter(source: string): number;
  recordFailure(source: string): void;
  recordSuccess(source: string): void;
  size(): number;
}

interface Bucket {
  windowStart: number;
  failures: number;
}

/**
 * The limiter key of a peer address: `loopback` for 127.0.0.0/8, ::1 and
 * their IPv4-mapped forms; the /64 prefix of other IPv6 peers; else the
 * address itself.
 */
export function sourceKey(remote: string): string {
  const addr = remote.toLowerCase().replace(/^\[|\]$/g, "").replace(/^::ffff:(?=\d+\.)/, "");
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(addr) || addr === "::1") return "loopback";
  if (!addr.includes(":")) return addr;
  const [head, tail = ""] = addr.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = [
    ...left,
    ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"),
    ...right,
  ];
  if (groups.slice(0, 7).every((g) => /^0+$/.test(g)) && groups[7] === "1") return "loopback";
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

export function createLoginLimiter(opts: LoginLimiterOptions = {}): LoginLimiter {
  const limit = opts.failures ?? LOGIN_FAILURES_PER_WINDOW;
  const windowMs = opts.windowMs ?? LOGIN_FAILURE_WINDOW_MS;
  const maxSources = opts.maxSources ?? LOGIN_SOURCES_TRACKED;
  const now = opts.now ?? Date.now;
  const buckets = new Map<string, Bucket>();

  function live(source: string, t: number): Bucket | null {
    const b = buckets.get(source);
    if (!b) return null;
    if (t - b.windowStart >= windowMs) {
      buckets.delete(source);
      return null;
    }
    return b;
  }

  function makeRoom(t: number): void {
    for (const [k, b] of buckets) if (t - b.windowStart >= windowMs) buckets.delete(k);
    while (buckets.size >= maxSources) {
      const oldest = buckets.keys().next().value;
      if (oldest === undefined) break;
      buckets.delete(oldest);
    }
  }

  return {
    retryAfter(remote) {
      const source = sourceKey(remote);
      const t = now();
      const b = live(source, t);
      if (!b || b.failures < limit) return 0;
      return Math.max(1, Math.ceil((b.windowStart + windowMs - t) / 1000));
    },
    recordFailure(remote) {
      const source = sourceKey(remote);
      const t = now();
      const b = live(source, t);
      if (b) {
        b.failures++;
        return;
      }
      if (buckets.size >= maxSources) makeRoom(t);
      buckets.set(source, { windowStart: t, failures: 1 });
    },
    recordSuccess(remote) {
      buckets.delete(sourceKey(remote));
    },
    size: () => buckets.size,
  };
}
