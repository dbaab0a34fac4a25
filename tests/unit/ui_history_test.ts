/**
 * [CV-3, SC-1] browser-side paging and command effects without a DOM: the
 * pager skips pages already shown, recovers once from a retired cursor, and
 * stops at the bound; command effects only touch next-Turn preferences.
 */
import { assertEquals } from "../helpers/assert.ts";
import { loadOlderTurns, OLDER_PAGES_PER_CLICK, type PageSource } from "../../ui/lib/history.ts";
import { admittedTurn, effectAction, runBody } from "../../ui/lib/commands.ts";
import { type ConversationPage, toTurn, type Turn } from "../../ui/lib/types.ts";
import { turnJson } from "../helpers/api_fixtures.ts";

const turn = (seq: number): Turn => toTurn(turnJson({ id: `t${seq}`, seq, state: "completed" }));

/** Pages of `size` Turns over seq 0..n-1; cursors are "c<first seq of the page below>". */
function pages(n: number, size: number, opts: { staleCursors?: Set<string> } = {}) {
  const calls: (string | null)[] = [];
  const source: PageSource = (before) => {
    calls.push(before);
    if (before !== null && opts.staleCursors?.has(before)) {
      opts.staleCursors.delete(before);
      return Promise.reject(Object.assign(new Error("stale"), { code: "invalid_session_cursor" }));
    }
    const end = before === null ? n : Number(before.slice(1));
    const start = Math.max(0, end - size);
    const page: ConversationPage = {
      conversation: { id: "c", title: "", updatedAt: null, parentId: null, activeRunId: null },
      turns: Array.from({ length: end - start }, (_, i) => turn(start + i)),
      before: start > 0 ? `c${start}` : null,
    };
    return Promise.resolve(page);
  };
  return { source, calls };
}

Deno.test("loadOlderTurns prepends the next page and returns its cursor", async () => {
  const { source } = pages(10, 4);
  const shown = [6, 7, 8, 9].map(turn);
  const r = await loadOlderTurns(source, shown, "c6");
  assertEquals(r.turns.map((t) => t.seq), [2, 3, 4, 5, 6, 7, 8, 9]);
  assertEquals(r.before, "c2");
});

Deno.test("loadOlderTurns skips pages that are already shown", async () => {
  const { source, calls } = pages(12, 4);
  const shown = [4, 5, 6, 7, 8, 9, 10, 11].map(turn);
  const r = await loadOlderTurns(source, shown, "c8");
  assertEquals(calls, ["c8", "c4"]);
  assertEquals(r.turns.map((t) => t.seq), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  assertEquals(r.before, null);
});

Deno.test("loadOlderTurns replaces a retired cursor once, then fails loudly", async () => {
  const stale = new Set(["c6"]);
  const { source, calls } = pages(10, 4, { staleCursors: stale });
  const r = await loadOlderTurns(source, [6, 7, 8, 9].map(turn), "c6");
  assertEquals(calls, ["c6", null, "c6"]);
  assertEquals(r.turns.map((t) => t.seq), [2, 3, 4, 5, 6, 7, 8, 9]);
  const always: PageSource = () =>
    Promise.reject(Object.assign(new Error("x"), { code: "invalid_session_cursor" }));
  let code = "";
  try {
    await loadOlderTurns(always, [], "c1");
  } catch (err) {
    code = (err as { code: string }).code;
  }
  assertEquals(code, "invalid_session_cursor");
});

Deno.test("loadOlderTurns reads at most OLDER_PAGES_PER_CLICK pages per click", async () => {
  const { source, calls } = pages(1000, 1);
  const shown = Array.from({ length: 1000 }, (_, i) => turn(i));
  const r = await loadOlderTurns(source, shown, "c999");
  assertEquals(calls.length, OLDER_PAGES_PER_CLICK);
  assertEquals(r.before, `c${999 - OLDER_PAGES_PER_CLICK}`);
});

Deno.test("command effects only change next-turn preferences or ask for a new conversation", () => {
  assertEquals(effectAction({ type: "set_model", model_id: "m" }), {
    kind: "prefs",
    patch: { modelId: "m" },
  });
  assertEquals(effectAction({ type: "compact_next_turn" }), {
    kind: "prefs",
    patch: { compactNext: true },
  });
  assertEquals(effectAction({ type: "new_conversation" }), { kind: "new_conversation" });
  assertEquals(effectAction({ type: "compact_summary" }), { kind: "compact_summary" });
  assertEquals(effectAction(null), { kind: "none" });
  assertEquals(runBody("hi", { draft: "", modelId: null, compactNext: false }), { message: "hi" });
  assertEquals(runBody("hi", { draft: "", modelId: "m", compactNext: true }), {
    message: "hi",
    model_id: "m",
    compact: true,
  });
  const t = admittedTurn("t", "r", "msg", 3);
  assertEquals([t.state, t.runId, t.userMessage, t.seq], ["running", "r", "msg", 3]);
});
