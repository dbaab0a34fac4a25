/**
 * The HTTP/1.1 wire rules shared by the product's two outbound clients — the
 * Ollama client (`model/http_client.ts`) and the MCP client
 * (`extensions/http1.ts`): how a request head is written, how a status line,
 * a header line and a chunk-size line are read, and which body framing a
 * response head announces. Pure; each client keeps its own socket, bounds,
 * deadlines and failure codes, and turns a `null` here into its own failure.
 *
 * What this file enforces: only `HTTP/1.0` or `HTTP/1.1` status lines with a
 * three-digit code; a header line needs a non-empty name before its colon;
 * repeated headers are joined with ", " (names lower-cased); a body is framed
 * by `Transfer-Encoding: chunked` (any other transfer coding is refused), else
 * by a decimal Content-Length of at most 12 digits, else by the end of the
 * connection; chunk sizes are hex of at most `maxDigits` digits (extensions
 * after `;` ignored).
 */

/** The request head: the request line, then the headers in order, then the empty line. */
export function requestHead(
  method: string,
  target: string,
  headers: readonly (readonly [string, string])[],
): string {
  return [`${method} ${target} HTTP/1.1`, ...headers.map(([k, v]) => `${k}: ${v}`), "", ""]
    .join("\r\n");
}

/** The status code of a status line, or null when it is not one. */
export function parseStatusLine(line: string): number | null {
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(line);
  return m ? Number(m[1]) : null;
}

/** Adds one header line to `headers`; false when the line is not `name: value`. */
export function addHeaderLine(headers: Map<string, string>, line: string): boolean {
  const c = line.indexOf(":");
  if (c <= 0) return false;
  const k = line.slice(0, c).trim().toLowerCase();
  const v = line.slice(c + 1).trim();
  const had = headers.get(k);
  headers.set(k, had === undefined ? v : `${had}, ${v}`);
  return true;
}

/** How a response body ends. */
export type BodyFraming =
  | { mode: "chunked" }
  | { mode: "length"; length: number }
  | { mode: "eof" };

/** The body framing a response head announces, or null when it is not one this side reads. */
export function bodyFraming(headers: ReadonlyMap<string, string>): BodyFraming | null {
  const te = headers.get("transfer-encoding");
  if (te !== undefined) return te.trim().toLowerCase() === "chunked" ? { mode: "chunked" } : null;
  const cl = headers.get("content-length");
  if (cl === undefined) return { mode: "eof" };
  return /^\d{1,12}$/.test(cl) ? { mode: "length", length: Number(cl) } : null;
}

/** The size a chunk-size line announces (0 ends the body), or null when it is malformed. */
export function parseChunkSize(line: string, maxDigits: number): number | null {
  const digits = line.split(";")[0].trim();
  if (digits.length < 1 || digits.length > maxDigits || !/^[0-9a-fA-F]+$/.test(digits)) {
    return null;
  }
  return parseInt(digits, 16);
}
