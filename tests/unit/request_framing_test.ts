/** The guard's request framer [GW-1]: boundaries, token stamping, and every refusal. */
import { GUARD_TOKEN_HEADER, RequestFramer } from "../../runtime/http/request_framing.ts";
import { CHUNK_LINE_MAX_BYTES, MAX_REQUEST_HEAD_BYTES } from "../../runtime/limits.ts";
import { assertEquals } from "../helpers/assert.ts";

const TOKEN = `${GUARD_TOKEN_HEADER}: t0k3n\r\n`;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Feeds `input` in pieces of `step` bytes; returns what was relayed and the outcome. */
function feed(input: string, step = Infinity) {
  const f = new RequestFramer(TOKEN);
  const bytes = enc.encode(input);
  let out = "";
  let error: string | null = null;
  for (let i = 0; i < bytes.length && error === null; i += Math.min(step, bytes.length)) {
    const r = f.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
    for (const b of r.forward) out += dec.decode(b);
    error = r.error;
  }
  return { out, error, phase: f.phase, requests: f.requests };
}

const GET = "GET /health HTTP/1.1\r\nhost: a\r\n\r\n";
const STAMPED_GET = `GET /health HTTP/1.1\r\n${TOKEN}host: a\r\n\r\n`;

Deno.test("a request is relayed with the token line after its request line, whole or byte by byte", () => {
  for (const step of [Infinity, 1, 3, 7]) {
    assertEquals(feed(GET, step), { out: STAMPED_GET, error: null, phase: "idle", requests: 1 });
  }
});

Deno.test("pipelined requests are each stamped; empty lines before a request are dropped", () => {
  const r = feed(`\r\n\r\n${GET}${GET}`);
  assertEquals(r.out, STAMPED_GET + STAMPED_GET);
  assertEquals(r.requests, 2);
});

Deno.test("a Content-Length body keeps the body phase until its last byte", () => {
  const head = "POST /api/login HTTP/1.1\r\ncontent-length: 5\r\n\r\n";
  const part = feed(head + "abc");
  assertEquals(part.phase, "body");
  assertEquals(part.error, null);
  const all = feed(head + "abcde" + GET, 2);
  assertEquals(
    all.out,
    `POST /api/login HTTP/1.1\r\n${TOKEN}content-length: 5\r\n\r\nabcde${STAMPED_GET}`,
  );
  assertEquals(all.phase, "idle");
  assertEquals(all.requests, 2);
});

Deno.test("a chunked body with extensions and trailers is relayed verbatim to its end", () => {
  const body = "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nx-trailer: y\r\n\r\n";
  const head = "POST /x HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\r\n";
  for (const step of [Infinity, 1, 4]) {
    const r = feed(head + body, step);
    assertEquals(r.error, null);
    assertEquals(r.phase, "idle");
    assertEquals(r.out, `POST /x HTTP/1.1\r\n${TOKEN}transfer-encoding: Chunked\r\n\r\n${body}`);
  }
  assertEquals(feed(head + "5\r\nhel").phase, "body");
});

Deno.test("anything the server might frame differently is refused", () => {
  const bad: [string, string][] = [
    ["bare LF line end", "GET / HTTP/1.1\nhost: a\r\n\r\n"],
    ["bare CR inside a value", "GET / HTTP/1.1\r\nhost: a\rb\r\n\r\n"],
    ["obs-fold", "GET / HTTP/1.1\r\nx: a\r\n  b\r\n\r\n"],
    ["space before the colon", "GET / HTTP/1.1\r\nhost : a\r\n\r\n"],
    ["NUL in a value", "GET / HTTP/1.1\r\nx: a\u0000b\r\n\r\n"],
    ["HTTP/2.0 request line", "GET / HTTP/2.0\r\n\r\n"],
    ["no version", "GET /\r\n\r\n"],
    ["non-ASCII target", "GET /é HTTP/1.1\r\n\r\n"],
    ["CONNECT", "CONNECT a:443 HTTP/1.1\r\n\r\n"],
    [
      "Content-Length and Transfer-Encoding",
      "POST / HTTP/1.1\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n",
    ],
    ["two different lengths", "POST / HTTP/1.1\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\n"],
    ["a length list", "POST / HTTP/1.1\r\ncontent-length: 3, 3\r\n\r\n"],
    ["a signed length", "POST / HTTP/1.1\r\ncontent-length: +3\r\n\r\n"],
    ["a coding other than chunked", "POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n"],
    [
      "two Transfer-Encoding lines",
      "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n",
    ],
    ["chunked on HTTP/1.0", "POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n"],
    ["a client-sent token header", `GET / HTTP/1.1\r\n${GUARD_TOKEN_HEADER}: forged\r\n\r\n`],
    [
      "whitespace after a chunk size",
      "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5 \r\nhello\r\n",
    ],
    [
      "a 16-digit chunk size",
      "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0000000000000005\r\n",
    ],
    [
      "chunk data without its CRLF",
      "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n1\r\naXY",
    ],
    [
      "a token header smuggled as a trailer",
      `POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n${GUARD_TOKEN_HEADER}: x\r\n\r\n`,
    ],
  ];
  for (const [name, input] of bad) {
    for (const step of [Infinity, 1]) assertEquals(feed(input, step).error, "bad_request", name);
  }
});

Deno.test("a head of MAX_REQUEST_HEAD_BYTES passes; one byte more is 431", () => {
  const fill = (n: number) => {
    const prefix = "GET / HTTP/1.1\r\nx: ";
    return prefix + "a".repeat(n - prefix.length - 4) + "\r\n\r\n";
  };
  assertEquals(fill(MAX_REQUEST_HEAD_BYTES).length, MAX_REQUEST_HEAD_BYTES);
  assertEquals(feed(fill(MAX_REQUEST_HEAD_BYTES)).error, null);
  assertEquals(feed(fill(MAX_REQUEST_HEAD_BYTES), 1000).error, null);
  assertEquals(feed(fill(MAX_REQUEST_HEAD_BYTES + 1)).error, "headers_too_large");
  assertEquals(feed(fill(MAX_REQUEST_HEAD_BYTES + 1), 1000).error, "headers_too_large");
  assertEquals(
    feed("GET / HTTP/1.1\r\nx: " + "a".repeat(MAX_REQUEST_HEAD_BYTES)).error,
    "headers_too_large",
  );
});

Deno.test("prior-knowledge HTTP/2 is refused on its first four bytes; nothing is relayed", () => {
  const r = feed("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 1);
  assertEquals(r, { out: "", error: "http2", phase: "head", requests: 0 });
  assertEquals(feed("PRI ").error, "http2");
  assertEquals(feed("PRI").error, null);
});

Deno.test("after a refusal every later push is refused too", () => {
  const f = new RequestFramer(TOKEN);
  assertEquals(f.push(enc.encode("GET / HTTP/1.1\nx: y\r\n\r\n")).error, "bad_request");
  assertEquals(f.push(enc.encode(GET)), { forward: [], error: "bad_request" });
});

Deno.test("a chunk-size line of CHUNK_LINE_MAX_BYTES (CRLF included) passes; one byte more refuses", () => {
  const head = "POST /x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n";
  const line = (n: number) => "5;" + "x".repeat(n - 4) + "\r\n";
  assertEquals(line(CHUNK_LINE_MAX_BYTES).length, CHUNK_LINE_MAX_BYTES);
  assertEquals(feed(head + line(CHUNK_LINE_MAX_BYTES) + "hello\r\n0\r\n\r\n").error, null);
  assertEquals(
    feed(head + line(CHUNK_LINE_MAX_BYTES + 1) + "hello\r\n0\r\n\r\n").error,
    "bad_request",
  );
  assertEquals(feed(head + line(CHUNK_LINE_MAX_BYTES + 1), 7).error, "bad_request");
});
