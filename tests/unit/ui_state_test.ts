/**
 * [UI-4, UI-5] composer state without a DOM: per-Conversation drafts/model
 * (bounded, persisted through a Storage), the context meter text, the URL
 * place used to re-attach after reload, and the tolerant response normalizers.
 */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import {
  createDraftStore,
  DRAFT_MAX_CHARS,
  DRAFT_STORAGE_KEY,
  DRAFTS_MAX,
  type KeyValueStorage,
} from "../../ui/lib/drafts.ts";
import {
  AUTO_TITLE_MAX_CHARS,
  autoTitle,
  COMMAND_MAX_BYTES,
  isNearBottom,
  mergeTurns,
  MESSAGE_MAX_BYTES,
  meterView,
  sizeView,
} from "../../ui/lib/format.ts";
import { COMMAND_INPUT_MAX_BYTES, USER_MESSAGE_MAX_BYTES } from "../../runtime/limits.ts";
import { formatPlace, parsePlace } from "../../ui/lib/route.ts";
import { toCommandResult, toPage, toProjection, toTurn } from "../../ui/lib/types.ts";
import {
  commandResultJson,
  conversationJson,
  projectionJson,
  turnJson,
} from "../helpers/api_fixtures.ts";

function memoryStorage(): KeyValueStorage & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return { data, getItem: (k) => data.get(k) ?? null, setItem: (k, v) => void data.set(k, v) };
}

Deno.test("drafts and model choices are kept per conversation and survive a reload", () => {
  const storage = memoryStorage();
  const a = createDraftStore(storage);
  a.set("c1", { draft: "hello" });
  a.set("c2", { modelId: "qwen3.5:2b" });
  assertEquals(a.get("c1"), { draft: "hello", modelId: null, compactNext: false });
  const b = createDraftStore(storage);
  assertEquals(b.get("c2").modelId, "qwen3.5:2b");
  assertEquals(b.get("c1").draft, "hello");
  b.set("c1", { draft: "" });
  assertEquals(b.size(), 1, "empty entries are dropped");
});

Deno.test("the draft store keeps at most DRAFTS_MAX conversations and clips long drafts", () => {
  const s = createDraftStore(memoryStorage());
  for (let i = 0; i <= DRAFTS_MAX; i++) s.set(`c${i}`, { draft: "x" });
  assertEquals(s.size(), DRAFTS_MAX);
  assertEquals(s.get("c0").draft, "", "the oldest entry was dropped");
  s.set("big", { draft: "y".repeat(DRAFT_MAX_CHARS + 10) });
  assertEquals(s.get("big").draft.length, DRAFT_MAX_CHARS);
});

Deno.test("a corrupt stored draft list starts empty instead of failing", () => {
  const storage = memoryStorage();
  storage.setItem(DRAFT_STORAGE_KEY, "{not json");
  assertEquals(createDraftStore(storage).size(), 0);
  storage.setItem(DRAFT_STORAGE_KEY, JSON.stringify([[1, {}], ["ok", { draft: 5, modelId: 7 }]]));
  assertEquals(createDraftStore(storage).get("ok"), {
    draft: "",
    modelId: null,
    compactNext: false,
  });
});

Deno.test("the context meter reads '≈X / window, N% left', says exact and calibrated, or why it is unavailable", () => {
  // The meter reads the server's one meter object: used (fixed context + history), window, free.
  const p = toProjection({
    ...projectionJson({ context_tokens: 1234, window: 32768, remaining_percent: 96 }),
    fixed_context_tokens: 1000,
    history_tokens: 234,
  });
  assertEquals(meterView(p).text, "≈1.2k / 32.8k, 96% left");
  assertEquals(meterView(p).level, "ok");
  const high = toProjection(
    projectionJson({ context_tokens: 30000, window: 32768, remaining_percent: 0 }),
  );
  assertEquals(meterView(high).text, "≈30k / 32.8k, 0% left");
  // The reason is the server's fixed code, shown in words (never the raw code).
  assert(
    meterView(p).title.startsWith("Upper bound (1 token per byte): no tokenizer for this model;"),
  );
  assertThrows(() =>
    toProjection(projectionJson({ context_tokens: 1, window: 32768, remaining_percent: 99 }, {
      reason: "tokenizer_warming",
    }))
  );
  assertEquals(meterView(high).level, "high");
  const exact = toProjection(
    projectionJson({ context_tokens: 2000, window: 32768, remaining_percent: 81 }, {
      exact: true,
      calibrated: 1500,
    }),
  );
  assertEquals(meterView(exact).text, "exact 1.5k / 32.8k, 81% left · calibrated");
  const un = toProjection({ available: false, reason: "no_calibration" });
  assertEquals(meterView(un).text, "Context: unavailable (no_calibration)");
  assertEquals(meterView(null).text, "Context: loading…");
});

Deno.test("the URL place round-trips and ignores malformed ids", () => {
  const place = { agentId: "a-1", conversationId: "c_2" };
  assertEquals(parsePlace(formatPlace(place)), place);
  assertEquals(parsePlace("#/a/x%2F..%2F/c/y"), { agentId: null, conversationId: null });
  assertEquals(parsePlace("#/a/ok/c/<script>"), { agentId: "ok", conversationId: null });
  assertEquals(parsePlace("#garbage"), { agentId: null, conversationId: null });
  assertEquals(formatPlace({ agentId: null, conversationId: "c" }), "");
});

Deno.test("normalizers map the server's turn and page shapes", () => {
  const t = toTurn({
    id: "t1",
    seq: 4,
    state: "failed",
    user_message: "hi",
    assistant_message: null,
    run_id: "r1",
    created_at: "2026-01-01T00:00:00.000Z",
    finished_at: "2026-01-01T00:00:02.500Z",
    partial_text: null,
    terminal: { code: "model_unavailable", stage: "admission", retryable: true, duration_ms: 2500 },
  });
  assertEquals([t.state, t.code, t.stage, t.retryable, t.durationMs], [
    "failed",
    "model_unavailable",
    "admission",
    true,
    2500,
  ]);
  // A shape the contract does not allow is refused, never coerced.
  assertThrows(() => toTurn({ ...turnJson(), state: "<weird>" }));
  assertThrows(() => toTurn({ ...turnJson(), status: "completed" }));
  const page = toPage({
    session: conversationJson(),
    turns: [
      turnJson({ id: "b", seq: 2, state: "running", run_id: "r2" }),
      turnJson({
        id: "a",
        seq: 1,
        state: "completed",
      }),
    ],
    page: { limit: 32, has_more: true, next_before_cursor: "CUR" },
  });
  assertEquals(page.turns.map((x) => x.id), ["a", "b"]);
  assertEquals(page.before, "CUR");
  assertEquals(page.conversation.activeRunId, "r2");
  const merged = mergeTurns(
    [toTurn(turnJson({ id: "z", seq: 0 })), toTurn(turnJson({ id: "a", seq: 1 }))],
    page.turns,
  );
  assertEquals(merged.map((x) => x.id), ["z", "a", "b"]);
});

Deno.test("command results keep only known effects", () => {
  const r = toCommandResult(commandResultJson({
    command: "model",
    title: "Model selected",
    lines: [{ label: "a", value: "b" }],
    effect: { type: "set_model", model_id: "m" },
  }));
  assertEquals(r.effect, { type: "set_model", model_id: "m" });
  assertThrows(() => toCommandResult({ ...commandResultJson(), effect: { type: "run_shell" } }));
  assert(!toCommandResult(commandResultJson()).turnCreated);
});

Deno.test("isNearBottom allows a small slack", () => {
  assert(isNearBottom(952, 500, 1500));
  assert(!isNearBottom(900, 500, 1500));
});

Deno.test("autoTitle names an untitled conversation from its first message", () => {
  assertEquals(autoTitle("  Fix the\nbuild\tplease  "), "Fix the build please");
  assertEquals(autoTitle("\u0000\u200b\n"), null);
  const long = autoTitle("word ".repeat(40))!;
  assertEquals(Array.from(long).length <= AUTO_TITLE_MAX_CHARS, true);
  assert(long.endsWith("…"));
  assertEquals(autoTitle("a\u202eb"), "a b", "bidi controls are removed");
});

Deno.test("the composer counts UTF-8 bytes of what it would send, against the server's bounds", () => {
  assertEquals([MESSAGE_MAX_BYTES, COMMAND_MAX_BYTES], [
    USER_MESSAGE_MAX_BYTES,
    COMMAND_INPUT_MAX_BYTES,
  ]);
  assertEquals(sizeView("hello"), { text: null, over: false });
  assertEquals(sizeView("x".repeat(7372)), { text: null, over: false });
  assertEquals(sizeView("x".repeat(7373)), { text: "7,373 / 8,192 bytes", over: false });
  assertEquals(sizeView("x".repeat(8192)), { text: "8,192 / 8,192 bytes", over: false });
  assertEquals(sizeView("x".repeat(8193)), {
    text: "1 byte over the 8,192-byte limit",
    over: true,
  });
  // Bytes, not characters: 4097 two-byte characters are 8194 bytes.
  assertEquals(sizeView("é".repeat(4097)).text, "2 bytes over the 8,192-byte limit");
  // Enter sends the trimmed draft, so surrounding whitespace does not count.
  assertEquals(sizeView(`  ${"x".repeat(8192)}\n\n`).over, false);
  // A slash command has its own, smaller bound.
  assertEquals(sizeView(`/status ${"x".repeat(4088)}`).over, false);
  assertEquals(sizeView(`/status ${"x".repeat(4089)}`).over, true);
});
