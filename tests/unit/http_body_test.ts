/**
 * Request body bounds [GW-4] at their exact limits: 16 KiB declared and
 * streamed, JSON nesting depth and keys, JSON-only content types, UTF-8, and
 * strict schemas.
 */
import { z } from "zod";
import { AppError } from "../../runtime/errors.ts";
import {
  checkJsonShape,
  NoQuery,
  parseJsonBody,
  parseQuery,
  readBounded,
} from "../../runtime/http/body.ts";
import { JSON_BODY_MAX_BYTES, JSON_MAX_DEPTH, JSON_MAX_KEYS } from "../../runtime/limits.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../helpers/assert.ts";

const code = (c: string) => (e: unknown) =>
  assert(e instanceof AppError && e.code === c, String(e));

function req(body: BodyInit | null, headers: Record<string, string> = {}): Request {
  return new Request("http://127.0.0.1/x", { method: "POST", body, headers });
}

function streamOf(total: number, chunk = 1000): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= total) return c.close();
      const n = Math.min(chunk, total - sent);
      sent += n;
      c.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
}

Deno.test("a body of exactly 16 KiB is read; one byte more is refused while streaming", async () => {
  assertEquals((await readBounded(req(streamOf(JSON_BODY_MAX_BYTES)))).length, JSON_BODY_MAX_BYTES);
  await assertRejects(
    () => readBounded(req(streamOf(JSON_BODY_MAX_BYTES + 1))),
    code("body_too_large"),
  );
});

Deno.test("a declared Content-Length over 16 KiB is refused before any byte is read", async () => {
  let pulled = false;
  const body = new ReadableStream<Uint8Array>({
    pull() {
      pulled = true;
    },
  }, { highWaterMark: 0 }); // pull only when someone reads
  const r = new Request("http://127.0.0.1/x", {
    method: "POST",
    body,
    headers: { "content-length": String(JSON_BODY_MAX_BYTES + 1) },
  });
  await assertRejects(() => readBounded(r), code("body_too_large"));
  assert(!pulled, "the body was not read");
});

Deno.test(`JSON nests at most ${JSON_MAX_DEPTH} levels`, () => {
  const nest = (n: number): unknown => (n === 0 ? 1 : { a: nest(n - 1) });
  checkJsonShape(nest(JSON_MAX_DEPTH));
  assertThrows(() => checkJsonShape(nest(JSON_MAX_DEPTH + 1)), code("schema_violation"));
  const arrays = (n: number) => JSON.parse("[".repeat(n) + "]".repeat(n));
  checkJsonShape(arrays(JSON_MAX_DEPTH));
  assertThrows(() => checkJsonShape(arrays(JSON_MAX_DEPTH + 1)), code("schema_violation"));
});

Deno.test(`a JSON object or array holds at most ${JSON_MAX_KEYS} keys`, () => {
  const obj = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
  checkJsonShape(obj(JSON_MAX_KEYS));
  assertThrows(() => checkJsonShape(obj(JSON_MAX_KEYS + 1)), code("schema_violation"));
  checkJsonShape(new Array(JSON_MAX_KEYS).fill(0));
  assertThrows(
    () => checkJsonShape({ a: new Array(JSON_MAX_KEYS + 1).fill(0) }),
    code("schema_violation"),
  );
});

Deno.test("only application/json (optionally charset=utf-8) is accepted", async () => {
  const schema = z.object({ a: z.number() }).strict();
  for (
    const t of [
      "application/json",
      "Application/JSON",
      "application/json; charset=utf-8",
      "application/json;charset=UTF-8",
    ]
  ) {
    assertEquals(await parseJsonBody(req('{"a":1}', { "content-type": t }), schema), { a: 1 }, t);
  }
  for (
    const t of [
      "text/plain",
      "application/json; charset=latin1",
      "application/jsonp",
      "multipart/form-data",
      "application/x-www-form-urlencoded",
    ]
  ) {
    await assertRejects(
      () => parseJsonBody(req('{"a":1}', { "content-type": t }), schema),
      code("unsupported_media_type"),
    );
  }
  await assertRejects(() => parseJsonBody(req('{"a":1}'), schema), code("unsupported_media_type"));
});

Deno.test("invalid JSON or UTF-8 is 422 invalid_json; unknown fields are 422 schema_violation", async () => {
  const schema = z.object({ a: z.number() }).strict();
  const h = { "content-type": "application/json" };
  await assertRejects(() => parseJsonBody(req("{a:1}", h), schema), code("invalid_json"));
  await assertRejects(() => parseJsonBody(req("", h), schema), code("invalid_json"));
  await assertRejects(
    () => parseJsonBody(req(new Uint8Array([0x7b, 0xff, 0x7d]), h), schema),
    code("invalid_json"),
  );
  await assertRejects(
    () => parseJsonBody(req('{"a":1,"b":2}', h), schema),
    code("schema_violation"),
  );
  await assertRejects(
    () => parseJsonBody(req('{"a":1,"__proto__":{"x":1}}', h), schema),
    code("schema_violation"),
  );
});

Deno.test("a route without query parameters (NoQuery) refuses any with schema_violation", () => {
  const at = (q: string) => new URL(`http://127.0.0.1/api/x${q}`);
  assertEquals(parseQuery(at(""), NoQuery), {});
  assertEquals(parseQuery(at("?"), NoQuery), {});
  for (const q of ["?a=1", "?a", "?__proto__=1", "?a=1&a=2"]) {
    assertThrows(() => parseQuery(at(q), NoQuery), code("schema_violation"));
  }
});

Deno.test("a query schema sees each name once: a repeated parameter is refused, never first-wins", () => {
  const schema = z.object({ limit: z.string().regex(/^\d{1,3}$/) }).strict();
  assertEquals(parseQuery(new URL("http://127.0.0.1/x?limit=5"), schema), { limit: "5" });
  for (const q of ["?limit=5&limit=6", "?limit=x", "?limit=5&b=1", ""]) {
    assertThrows(
      () => parseQuery(new URL(`http://127.0.0.1/x${q}`), schema),
      code("schema_violation"),
    );
  }
});
