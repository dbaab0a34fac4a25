/**
 * One bounded HTTP/1.1 POST to a pinned MCP server address [LC-5].
 *
 * What this file enforces: the TCP connection goes to the PINNED address only
 * (never a DNS lookup); TLS is negotiated on that socket with the URL's host
 * name as SNI and verified against the system CA store (plus an optional
 * per-server CA file); one request per connection (`Connection: close`);
 * the request body is capped before anything is sent; the status line and
 * headers are capped, and so is every body byte read (Content-Length,
 * chunked or read-to-close) — a body past the bound is cut at the bound and
 * reported, never buffered; every 3xx is refused (never followed); the whole
 * exchange runs under one deadline and an abort signal, after which the
 * socket is closed. Failures are fixed error codes, never exception text.
 * The wire rules (head, status, headers, framing) are protocol/http1.ts's,
 * shared with the Ollama client.
 */
import type { ErrorCode } from "../errors.ts";
import { MCP_REQUEST_MAX_BYTES, MCP_RESPONSE_HEAD_MAX_BYTES } from "../limits.ts";
import {
  addHeaderLine,
  bodyFraming,
  parseChunkSize,
  parseStatusLine,
  requestHead,
} from "../protocol/http1.ts";
import type { PinnedServer } from "./net_rules.ts";

export type Fail = { ok: false; code: ErrorCode };

/** What the caller reads the body with: bytes in order, then null at its end. */
export interface BodyReader {
  /** The next piece of the body, or null at its end; fails with the fixed code. */
  next(): Promise<Uint8Array | null>;
}

export interface HttpResponse {
  status: number;
  /** Header names lower-case; repeated headers joined with ", ". */
  headers: Map<string, string>;
  body: BodyReader;
}

/** Raised inside this module only; turned into a Fail at its edge. */
class Cut extends Error {
  constructor(readonly code: ErrorCode) {
    super(code);
  }
}

const SYSTEM_CA_FILES = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/cert.pem",
];
let systemCas: string[] | null = null;

/** The system CA store as PEM certificates, read once. */
export function systemCaCerts(): string[] {
  if (systemCas) return systemCas;
  for (const f of SYSTEM_CA_FILES) {
    try {
      const pem = Deno.readTextFileSync(f);
      systemCas = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      if (systemCas.length > 0) return systemCas;
    } catch {
      // next candidate
    }
  }
  systemCas = [];
  return systemCas;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: Uint8Array;
  /** Absolute deadline (performance.now() clock). */
  deadline: number;
  signal?: AbortSignal;
  /** Extra PEM CA certificates of this server. */
  caCerts?: string[];
}

/** A socket with a read buffer; every read observes the closing deadline. */
class Wire {
  buf = new Uint8Array(0);
  eof = false;
  constructor(private conn: Deno.Conn) {}

  async fill(): Promise<boolean> {
    if (this.eof) return false;
    const chunk = new Uint8Array(16 * 1024);
    let n: number | null;
    try {
      n = await this.conn.read(chunk);
    } catch {
      throw new Cut("mcp_unreachable");
    }
    if (n === null) {
      this.eof = true;
      return false;
    }
    const next = new Uint8Array(this.buf.length + n);
    next.set(this.buf);
    next.set(chunk.subarray(0, n), this.buf.length);
    this.buf = next;
    return true;
  }

  take(n: number): Uint8Array {
    const out = this.buf.slice(0, n);
    this.buf = this.buf.slice(n);
    return out;
  }

  /** One CRLF-terminated line (without it), at most `max` bytes. */
  async line(max: number): Promise<string> {
    for (;;) {
      const i = this.buf.indexOf(10);
      if (i >= 0) {
        if (i > max) throw new Cut("mcp_protocol_error");
        const l = this.take(i + 1);
        return new TextDecoder().decode(l.subarray(0, l.length - (l[i - 1] === 13 ? 2 : 1)));
      }
      if (this.buf.length > max) throw new Cut("mcp_protocol_error");
      if (!await this.fill()) throw new Cut("mcp_protocol_error");
    }
  }
}

function target(p: PinnedServer): string {
  const h = p.host.includes(":") ? `[${p.host}]` : p.host;
  const def = p.scheme === "https" ? 443 : 80;
  return p.port === def ? h : `${h}:${p.port}`;
}

/**
 * Sends one POST to the pinned address and returns the response head and a
 * bounded body reader. The caller must call `close()` when done.
 */
export async function pinnedPost(
  server: PinnedServer,
  opts: PostOptions,
): Promise<({ ok: true; res: HttpResponse; close(): void }) | Fail> {
  if (opts.body.length > MCP_REQUEST_MAX_BYTES) return { ok: false, code: "mcp_request_too_large" };
  let conn: Deno.Conn | null = null;
  let closed = false;
  let timedOut = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
    try {
      conn?.close();
    } catch {
      // already closed
    }
  };
  const onAbort = () => close();
  const timer = setTimeout(() => {
    timedOut = true;
    close();
  }, Math.max(1, opts.deadline - performance.now()));
  opts.signal?.addEventListener("abort", onAbort);
  const fail = (code: ErrorCode): Fail => {
    close();
    return { ok: false, code: timedOut ? "mcp_timeout" : code };
  };
  if (opts.signal?.aborted) return fail("mcp_timeout");
  try {
    const tcp = await Deno.connect({ hostname: server.address, port: server.port });
    if (closed) {
      tcp.close();
      return fail("mcp_unreachable");
    }
    conn = tcp;
    if (server.scheme === "https") {
      try {
        conn = await Deno.startTls(tcp, {
          hostname: server.host,
          caCerts: [...systemCaCerts(), ...(opts.caCerts ?? [])],
        });
        await (conn as Deno.TlsConn).handshake();
      } catch {
        return fail("mcp_tls_failed");
      }
    }
  } catch {
    return fail("mcp_unreachable");
  }
  const head = requestHead("POST", server.path || "/", [
    ["Host", target(server)],
    ["Connection", "close"],
    ["Content-Length", String(opts.body.length)],
    ...Object.entries(opts.headers),
  ]);
  const w = new Wire(conn);
  try {
    const out = new Uint8Array([...new TextEncoder().encode(head), ...opts.body]);
    let off = 0;
    while (off < out.length) off += await conn.write(out.subarray(off));
  } catch {
    return fail("mcp_unreachable");
  }
  try {
    let budget = MCP_RESPONSE_HEAD_MAX_BYTES;
    const status = await w.line(budget);
    budget -= status.length;
    const code = parseStatusLine(status);
    if (code === null) return fail("mcp_protocol_error");
    const headers = new Map<string, string>();
    for (;;) {
      const l = await w.line(budget);
      budget -= l.length + 2;
      if (budget < 0) return fail("mcp_protocol_error");
      if (l === "") break;
      if (!addHeaderLine(headers, l)) return fail("mcp_protocol_error");
    }
    if (code >= 300 && code < 400) return fail("mcp_redirect_refused");
    const body = bodyReader(w, headers);
    const guarded: BodyReader = {
      next: async () => {
        try {
          return await body.next();
        } catch (e) {
          if (timedOut) throw new McpWireError("mcp_timeout");
          if (e instanceof Cut) throw new McpWireError(e.code);
          throw new McpWireError("mcp_unreachable");
        }
      },
    };
    return { ok: true, res: { status: code, headers, body: guarded }, close };
  } catch (e) {
    if (e instanceof Cut) return fail(e.code);
    return fail("mcp_unreachable");
  }
}

/** The fixed code a body read failed with (thrown by BodyReader.next). */
export class McpWireError extends Error {
  constructor(readonly code: ErrorCode) {
    super(code);
  }
}

function bodyReader(w: Wire, headers: Map<string, string>): BodyReader {
  const framing = bodyFraming(headers);
  if (framing === null) throw new Cut("mcp_protocol_error");
  if (framing.mode === "chunked") {
    let left = 0;
    let done = false;
    return {
      async next() {
        if (done) return null;
        if (left === 0) {
          const size = parseChunkSize(await w.line(64), 8);
          if (size === null) throw new Cut("mcp_protocol_error");
          left = size;
          if (left === 0) {
            done = true;
            return null;
          }
        }
        while (w.buf.length === 0) if (!await w.fill()) throw new Cut("mcp_protocol_error");
        const part = w.take(Math.min(left, w.buf.length));
        left -= part.length;
        if (left === 0) {
          const crlf = await w.line(2);
          if (crlf !== "") throw new Cut("mcp_protocol_error");
        }
        return part;
      },
    };
  }
  let left = framing.mode === "length" ? framing.length : Infinity;
  return {
    async next() {
      if (left === 0) return null;
      if (w.buf.length === 0 && !await w.fill()) {
        if (left === Infinity) return null;
        throw new Cut("mcp_protocol_error");
      }
      const part = w.take(Math.min(left, w.buf.length));
      left -= part.length;
      return part;
    },
  };
}
