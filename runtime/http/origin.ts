/**
 * Same-origin and allowed-Host decisions [GW-1, GW-3], as pure functions.
 *
 * - Host must be one of the names this server is reachable under (defends
 *   against DNS rebinding: a foreign name resolving to us is refused).
 * - Origin, when required, must equal `http://<that Host>` exactly — no
 *   prefix/suffix matching, no scheme or port leniency, `null` refused.
 * - `Sec-Fetch-Site: cross-site|same-site` is refused even on reads.
 *
 * SECURITY: forwarded headers (Forwarded, X-Forwarded-*, X-Real-IP) are never
 * read; there is no reverse-proxy trust. There is no TLS, so origins are http.
 */

export interface BoundAddress {
  hostname: string;
  port: number;
}

/** Hostnames for a wildcard bind: interface addresses and the machine name. */
export interface HostNames {
  addresses: readonly string[];
  machineName: string | null;
}

function withPort(host: string, port: number): string[] {
  const h = host.includes(":") ? `[${host}]` : host;
  const lower = h.toLowerCase();
  return port === 80 ? [`${lower}:80`, lower] : [`${lower}:${port}`];
}

/**
 * The exact Host header values this server accepts. A loopback bind accepts
 * its address and `localhost`; a wildcard bind (0.0.0.0 / ::) additionally
 * accepts every interface address and the machine name (operator's choice).
 */
export function allowedHosts(bound: BoundAddress, names: HostNames): Set<string> {
  const out = new Set<string>();
  const add = (h: string) => withPort(h, bound.port).forEach((v) => out.add(v));
  const h = bound.hostname.toLowerCase();
  if (h === "0.0.0.0" || h === "::") {
    add("localhost");
    for (const a of names.addresses) {
      if (h === "0.0.0.0" && a.includes(":")) continue;
      add(a);
    }
    if (names.machineName) add(names.machineName);
  } else {
    add(h);
    if (h === "127.0.0.1" || h === "::1" || h === "localhost") add("localhost");
  }
  return out;
}

export type OriginVerdict = "ok" | "host_forbidden" | "origin_forbidden";

export interface OriginInput {
  host: string | null;
  origin: string | null;
  secFetchSite: string | null;
}

/**
 * Decides Host and Origin for one request. `requireOrigin` is set for every
 * state-changing route; reads accept a missing Origin (browsers omit it on
 * same-origin GETs) but never a foreign one.
 */
export function checkOrigin(
  input: OriginInput,
  allowed: ReadonlySet<string>,
  requireOrigin: boolean,
): OriginVerdict {
  // Deny when the header is missing: HTTP/1.1 always sends Host.
  if (input.host === null) return "host_forbidden";
  const host = input.host.toLowerCase();
  if (!allowed.has(host)) return "host_forbidden";
  const site = input.secFetchSite;
  if (site !== null && site !== "same-origin" && site !== "none") return "origin_forbidden";
  if (input.origin === null) return requireOrigin ? "origin_forbidden" : "ok";
  // Exact string equality against our own origin as reached by this Host.
  return input.origin.toLowerCase() === `http://${host}` ? "ok" : "origin_forbidden";
}
