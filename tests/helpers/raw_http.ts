/**
 * A raw HTTP/1.1 client over a loopback TCP socket, for requests `fetch`
 * refuses to make: a forged Host header, oversized headers, a body streamed
 * without Content-Length, a lying Content-Length. Always `Connection: close`.
 */

export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
}

export interface RawRequest {
  method: string;
  path: string;
  /** Sent in this order; a `host` entry replaces the default Host. */
  headers?: [string, string][];
  /** Body bytes sent as-is (no Content-Length is added). */
  body?: Uint8Array | string;
  /** Milliseconds before giving up. @default 10000 */
  timeoutMs?: number;
}

function decodeChunked(raw: Uint8Array): Uint8Array {
  const out: number[] = [];
  let i = 0;
  const dec = new TextDecoder();
  while (i < raw.length) {
    let j = i;
    while (j < raw.length - 1 && !(raw[j] === 13 && raw[j + 1] === 10)) j++;
    const size = parseInt(dec.decode(raw.subarray(i, j)), 16);
    if (!Number.isFinite(size) || size === 0) break;
    out.push(...raw.subarray(j + 2, j + 2 + size));
    i = j + 2 + size + 2;
  }
  return new Uint8Array(out);
}

export async function rawRequest(port: number, req: RawRequest): Promise<RawResponse> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const timer = setTimeout(() => conn.close(), req.timeoutMs ?? 10_000);
  try {
    const headers = req.headers ?? [];
    const hasHost = headers.some(([k]) => k.toLowerCase() === "host");
    const lines = [`${req.method} ${req.path} HTTP/1.1`];
    if (!hasHost) lines.push(`host: 127.0.0.1:${port}`);
    for (const [k, v] of headers) lines.push(`${k}: ${v}`);
    lines.push("connection: close", "", "");
    const enc = new TextEncoder();
    await writeAll(conn, enc.encode(lines.join("\r\n")));
    if (req.body !== undefined) {
      const body = typeof req.body === "string" ? enc.encode(req.body) : req.body;
      // The server may answer (413) and close before reading everything.
      await writeAll(conn, body).catch((err) => {
        if (
          !(err instanceof Deno.errors.BrokenPipe || err instanceof Deno.errors.ConnectionReset)
        ) {
          throw err;
        }
      });
    }
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(16 * 1024);
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch (err) {
        if (err instanceof Deno.errors.ConnectionReset && chunks.length > 0) break;
        throw err;
      }
      if (n === null) break;
      chunks.push(buf.slice(0, n));
      // A server may answer early (413) and keep the socket open for the rest
      // of a body it will never read: stop once the response is complete.
      if (responseComplete(chunks)) break;
    }
    const all = concat(chunks);
    let split = -1;
    for (let i = 0; i + 3 < all.length; i++) {
      if (all[i] === 13 && all[i + 1] === 10 && all[i + 2] === 13 && all[i + 3] === 10) {
        split = i;
        break;
      }
    }
    if (split < 0) throw new Error(`no HTTP response head (${all.length} bytes)`);
    const head = new TextDecoder().decode(all.subarray(0, split)).split("\r\n");
    const status = Number(head[0].split(" ")[1]);
    const h = new Headers();
    for (const line of head.slice(1)) {
      const c = line.indexOf(":");
      h.append(line.slice(0, c).trim(), line.slice(c + 1).trim());
    }
    let body: Uint8Array = all.subarray(split + 4);
    if (h.get("transfer-encoding") === "chunked") body = decodeChunked(body);
    return { status, headers: h, body: new TextDecoder().decode(body) };
  } finally {
    clearTimeout(timer);
    closeQuietly(conn);
  }
}

/** Closes a socket that the timeout may already have closed. */
function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch (err) {
    if (!(err instanceof Deno.errors.BadResource)) throw err;
  }
}

function responseComplete(chunks: Uint8Array[]): boolean {
  const text = new TextDecoder().decode(concat(chunks));
  const split = text.indexOf("\r\n\r\n");
  if (split < 0) return false;
  const head = text.slice(0, split);
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) return text.endsWith("\r\n0\r\n\r\n");
  const m = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (m === null) return false;
  return new TextEncoder().encode(text.slice(split + 4)).length >= Number(m[1]);
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    all.set(c, off);
    off += c.length;
  }
  return all;
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await conn.write(data.subarray(off));
}
