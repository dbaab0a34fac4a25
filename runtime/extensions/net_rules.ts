/**
 * Network rules for MCP servers [LC-5].
 *
 * What this file enforces:
 * - a server URL is `https://host[:port]/path` with no credentials, query
 *   fragments or odd schemes; plain `http` only when the host is an IP
 *   literal the operator allowlisted exactly (`--mcp-allow-ip 127.0.0.1`);
 * - the name is resolved ONCE (through an injectable resolver) and the
 *   address is pinned: every later request connects to that address and
 *   never asks DNS again, so a name that re-resolves elsewhere is not
 *   followed;
 * - private, loopback, link-local, unspecified, multicast and reserved
 *   addresses (IPv4 and IPv6, IPv4-mapped included) are refused unless the
 *   URL's host is that exact allowlisted literal; a name whose answers
 *   contain any such address is refused as a whole.
 * Pure except for the default resolver.
 */
import type { ErrorCode } from "../errors.ts";

export type Fail = { ok: false; code: ErrorCode };

/** A parsed, rule-checked server URL (not yet resolved). */
export interface ServerUrl {
  scheme: "http" | "https";
  /** The host as written (name or IP literal without brackets), lower case. */
  host: string;
  port: number;
  /** Path and query of the endpoint. */
  path: string;
  /** True when the host is an IP literal. */
  literal: boolean;
}

/** A server URL with its pinned address: every request goes to `address`. */
export interface PinnedServer extends ServerUrl {
  address: string;
}

/** Resolves a host name to its addresses (A and AAAA). */
export type Resolver = (host: string) => Promise<string[]>;

export const systemResolver: Resolver = async (host) => {
  const out: string[] = [];
  for (const t of ["A", "AAAA"] as const) {
    try {
      out.push(...await Deno.resolveDns(host, t));
    } catch {
      // NXDOMAIN / no record of this type: the other type may answer.
    }
  }
  return out;
};

function parseIpv4(s: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return null;
  const b = m.slice(1).map(Number);
  if (b.some((x, i) => x > 255 || (m[i + 1].length > 1 && m[i + 1][0] === "0"))) return null;
  return b;
}

/** Eight 16-bit groups, or null. Accepts `::` compression and a trailing dotted IPv4. */
function parseIpv6(s: string): number[] | null {
  if (!/^[0-9a-f:.]+$/.test(s) || s.length > 45) return null;
  if (s.includes(".")) {
    // A trailing dotted IPv4 stands for the last two groups.
    const lastColon = s.lastIndexOf(":");
    const v4 = parseIpv4(s.slice(lastColon + 1));
    const g = v4 ? parseIpv6(s.slice(0, lastColon + 1) + "0:0") : null;
    if (!v4 || !g) return null;
    return [...g.slice(0, 6), (v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
  }
  const head = s;
  const parts = head.split("::");
  if (parts.length > 2) return null;
  const group = (p: string) =>
    p === "" ? [] : p.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN));
  const left = group(parts[0]);
  const right = parts.length === 2 ? group(parts[1]) : [];
  if ([...left, ...right].some((n) => Number.isNaN(n))) return null;
  const total = left.length + right.length;
  if (parts.length === 1 ? total !== 8 : total > 7) return null;
  return [...left, ...new Array(8 - total).fill(0), ...right];
}

/** True for an IP literal (v4 dotted quad or v6). */
export function isIpLiteral(s: string): boolean {
  return parseIpv4(s) !== null || parseIpv6(s.toLowerCase()) !== null;
}

/** The canonical text of an IP literal (v6 lower-case, fully expanded groups joined) or null. */
export function canonicalIp(s: string): string | null {
  const v4 = parseIpv4(s);
  if (v4) return v4.join(".");
  const v6 = parseIpv6(s.toLowerCase());
  return v6 ? v6.map((g) => g.toString(16)).join(":") : null;
}

function v4Private(b: number[]): boolean {
  const [a, c] = b;
  return a === 0 || a === 10 || a === 127 || (a === 100 && c >= 64 && c <= 127) ||
    (a === 169 && c === 254) || (a === 172 && c >= 16 && c <= 31) ||
    (a === 192 && c === 168) || (a === 192 && c === 0 && b[2] === 0) ||
    (a === 198 && (c === 18 || c === 19)) || a >= 224;
}

/**
 * True when the address is not a public unicast address: private, loopback,
 * link-local, unspecified, CGNAT, benchmark, multicast or reserved.
 */
export function isNonPublicAddress(ip: string): boolean {
  const v4 = parseIpv4(ip);
  if (v4) return v4Private(v4);
  const g = parseIpv6(ip.toLowerCase());
  if (!g) return true; // not an address at all: fail closed
  const zeroPrefix = g.slice(0, 5).every((x) => x === 0);
  // IPv4-mapped / IPv4-compatible addresses are judged as their IPv4 address.
  if (zeroPrefix && (g[5] === 0xffff || g[5] === 0)) {
    if (g[5] === 0 && g[6] === 0 && g[7] <= 1) return true; // :: and ::1
    return v4Private([g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255]);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b) { // NAT64 well-known prefix
    return v4Private([g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255]);
  }
  return (g[0] & 0xfe00) === 0xfc00 || (g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xff00) === 0xff00 ||
    (g[0] & 0xffc0) === 0xfec0 || (g[0] === 0x2001 && g[1] === 0x0db8) || g[0] === 0x0100;
}

/** An allowlist entry must itself be a canonical IP literal. */
export function parseAllowIp(s: string): string | null {
  return canonicalIp(s);
}

/** Parses and checks a server URL against the scheme rule. */
export function parseServerUrl(raw: string, allowIps: readonly string[]): ServerUrl | Fail {
  if (raw.length > 2048 || !/^[\x21-\x7e]+$/.test(raw)) {
    return { ok: false, code: "mcp_url_invalid" };
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, code: "mcp_url_invalid" };
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") {
    return { ok: false, code: "mcp_scheme_refused" };
  }
  if (u.username || u.password || u.hash || !u.hostname) {
    return { ok: false, code: "mcp_url_invalid" };
  }
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  const literal = isIpLiteral(host);
  const canon = literal ? canonicalIp(host)! : host;
  const allowed = literal && allowIps.includes(canon);
  const scheme = u.protocol === "https:" ? "https" : "http";
  if (scheme === "http" && !allowed) return { ok: false, code: "mcp_scheme_refused" };
  if (literal && !allowed && isNonPublicAddress(host)) {
    return { ok: false, code: "mcp_address_refused" };
  }
  const port = u.port ? Number(u.port) : scheme === "https" ? 443 : 80;
  return {
    scheme,
    host: literal ? host : host.toLowerCase(),
    port,
    path: u.pathname + u.search,
    literal,
  };
}

/**
 * Resolves the name once and pins the address [LC-5]. An IP literal pins
 * itself; a name with no answer is `mcp_dns_failed`; a name with any
 * non-public answer that is not exactly allowlisted is
 * `mcp_address_refused`. The first answer is pinned.
 */
export async function pinServer(
  url: ServerUrl,
  allowIps: readonly string[],
  resolver: Resolver = systemResolver,
): Promise<{ ok: true; pinned: PinnedServer } | Fail> {
  if (url.literal) return { ok: true, pinned: { ...url, address: url.host } };
  let answers: string[];
  try {
    answers = await resolver(url.host);
  } catch {
    return { ok: false, code: "mcp_dns_failed" };
  }
  if (answers.length === 0) return { ok: false, code: "mcp_dns_failed" };
  const allowed = (a: string) => allowIps.includes(canonicalIp(a) ?? "");
  if (answers.some((a) => isNonPublicAddress(a) && !allowed(a))) {
    return { ok: false, code: "mcp_address_refused" };
  }
  return { ok: true, pinned: { ...url, address: answers[0] } };
}
