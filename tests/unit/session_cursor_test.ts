/** [CV-3] Turn-page cursors: only this process's HMAC key mints them, and each is bound. */
import { Buffer } from "node:buffer";
import { createCursorCodec } from "../../runtime/conversations/cursor.ts";
import { assertEquals, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";

const A = "11111111-1111-4111-8111-111111111111";
const C = "22222222-2222-4222-8222-222222222222";
const OTHER = "33333333-3333-4333-8333-333333333333";
const bound = { agentId: A, conversationId: C, revision: 7 };

Deno.test("a cursor round-trips to its boundary for the same Agent, Conversation and revision", () => {
  const codec = createCursorCodec();
  const token = codec.encode({ ...bound, boundarySeq: 9969 });
  assertEquals(codec.decode(token, bound), 9969);
});

Deno.test("cursors are refused with invalid_session_cursor when they do not verify", async (t) => {
  const codec = createCursorCodec();
  const good = codec.encode({ ...bound, boundarySeq: 33 });
  const [payload, mac] = good.split(".");
  const forgedPayload = Buffer.from(`tp1|${A}|${C}|7|1`, "utf8").toString("base64url");
  const flip = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1);
  const cases: [string, string, typeof bound][] = [
    ["empty", "", bound],
    ["garbage", "not-a-cursor", bound],
    ["three parts", `${good}.x`, bound],
    ["non-base64url", `${payload}.${mac}!`, bound],
    ["over length", "A".repeat(300), bound],
    ["altered MAC", `${payload}.${flip(mac)}`, bound],
    ["truncated MAC", `${payload}.${mac.slice(0, 20)}`, bound],
    ["forged payload with a copied MAC", `${forgedPayload}.${mac}`, bound],
    ["another Conversation", good, { ...bound, conversationId: OTHER }],
    ["another Agent", good, { ...bound, agentId: OTHER }],
    ["a stale revision (rename, new Turn)", good, { ...bound, revision: 8 }],
  ];
  for (const [name, token, expect] of cases) {
    await t.step(name, () => {
      assertThrows(() => codec.decode(token, expect), expectCode("invalid_session_cursor"));
    });
  }
});

Deno.test("a cursor minted before a restart (a different key) is refused", () => {
  const before = createCursorCodec().encode({ ...bound, boundarySeq: 5 });
  const after = createCursorCodec();
  assertThrows(() => after.decode(before, bound), expectCode("invalid_session_cursor"));
});

Deno.test("the same key verifies across codecs, but a re-tagged payload under a copied MAC is refused", () => {
  const key = new Uint8Array(32).fill(1);
  const codec = createCursorCodec(key);
  const token = codec.encode({ ...bound, boundarySeq: 5 });
  assertEquals(createCursorCodec(key).decode(token, bound), 5);
  const [, mac] = token.split(".");
  const other = Buffer.from(`tp2|${A}|${C}|7|5`, "utf8").toString("base64url");
  assertThrows(() => codec.decode(`${other}.${mac}`, bound), expectCode("invalid_session_cursor"));
});

Deno.test("encode refuses a boundary below 1 and a short key is a programming error", () => {
  const codec = createCursorCodec();
  assertThrows(() => codec.encode({ ...bound, boundarySeq: 0 }));
  assertThrows(() => createCursorCodec(new Uint8Array(8)));
});
