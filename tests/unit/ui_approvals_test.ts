/**
 * [UI-1, UI-4, TL-2] without a DOM: pending approvals come from the durable
 * list read once plus the Run streams' `permission.*` events (no polling),
 * and the empty-state composer creates its Conversation titled from the
 * message and starts the first Turn through the real endpoint builders.
 */
import { assertEquals } from "../helpers/assert.ts";
import { conversationJson } from "../helpers/api_fixtures.ts";
import { approvalsFor, type ApprovalSource, pendingApprovals } from "../../ui/lib/approvals.ts";
import { agentDraftKey, startFirstTurn } from "../../ui/lib/first_turn.ts";
import { createApi, type Method } from "../../ui/lib/endpoints.ts";
import { createDraftStore } from "../../ui/lib/drafts.ts";
import type { EventEnvelope, PendingPermission } from "../../ui/lib/types.ts";

function env(seq: number, kind: string, payload: Record<string, unknown>): EventEnvelope {
  return { seq, kind, ts: 0, payload, run_id: "r1", agent_id: "a", conversation_id: "c1" };
}

const requested = (seq: number, id: string) =>
  env(seq, "permission.requested", {
    permission_id: id,
    call_id: `call-${id}`,
    tool_id: "file/write",
    preview: `write ${id}`,
    plan_digest: "0".repeat(64),
  });
const decided = (seq: number, id: string, decision = "approve") =>
  env(seq, "permission.decided", { permission_id: id, call_id: `call-${id}`, decision });

function run(events: EventEnvelope[], terminal: EventEnvelope | null = null): ApprovalSource {
  return { runId: "r1", conversationId: "c1", events, terminal };
}

const fetched = (id: string, runId = "r0"): PendingPermission => ({
  id,
  runId,
  conversationId: null,
  tool: "file/edit",
  preview: "from the list",
  diff: "",
  alwaysAllow: null,
  fullDiffBytes: null,
});

Deno.test("a streamed permission.requested shows an approval with its tool and preview", () => {
  const got = pendingApprovals(
    [],
    [run([env(1, "run.started", {}), requested(2, "p1")])],
    new Set(),
  );
  assertEquals(got, [{
    id: "p1",
    runId: "r1",
    conversationId: "c1",
    tool: "file/write",
    preview: "write p1",
    diff: "",
    alwaysAllow: null,
    fullDiffBytes: null,
  }]);
});

Deno.test("a streamed request carries its Always-allow rule and full-diff size [TL-10, TL-12]", () => {
  const always = { tool: "file/write", decision: "allow", path_prefix: "notes" };
  const ev = env(2, "permission.requested", {
    permission_id: "p1",
    call_id: "call-p1",
    tool_id: "file/write",
    preview: "write p1",
    plan_digest: "0".repeat(64),
    always_allow: always,
    full_diff_bytes: 9000,
  });
  const [got] = pendingApprovals([], [run([ev])], new Set());
  assertEquals([got.alwaysAllow, got.fullDiffBytes], [always, 9000]);
  // A rule of any other shape is not offered.
  const odd = env(2, "permission.requested", {
    permission_id: "p2",
    call_id: "call-p2",
    tool_id: "file/write",
    preview: "x",
    plan_digest: "0".repeat(64),
    always_allow: { tool: "file/write", decision: "deny" },
  });
  assertEquals(pendingApprovals([], [run([odd])], new Set())[0].alwaysAllow, null);
});

Deno.test("a streamed permission.decided clears it, whatever the decision", () => {
  for (const d of ["approve", "deny", "expired"]) {
    const got = pendingApprovals([], [run([requested(2, "p1"), decided(3, "p1", d)])], new Set());
    assertEquals(got, [], d);
  }
  // Out-of-order delivery in the array still folds in seq order.
  assertEquals(pendingApprovals([], [run([decided(3, "p1"), requested(2, "p1")])], new Set()), []);
});

Deno.test("the list fetched at attach stays until the stream decides it or its Run ends", () => {
  const list = [fetched("p1", "r1"), fetched("p9", "r9")];
  const attached = pendingApprovals(list, [run([requested(2, "p1")])], new Set());
  assertEquals(attached.map((p) => [p.id, p.preview]), [["p1", "from the list"], [
    "p9",
    "from the list",
  ]]);
  const decidedNow = pendingApprovals(
    list,
    [run([requested(2, "p1"), decided(3, "p1")])],
    new Set(),
  );
  assertEquals(decidedNow.map((p) => p.id), ["p9"]);
  const ended = pendingApprovals(list, [run([], env(4, "run.cancelled", {}))], new Set());
  assertEquals(ended.map((p) => p.id), ["p9"]);
});

Deno.test("an approval this browser decided disappears before its event arrives", () => {
  const got = pendingApprovals([fetched("p2")], [run([requested(2, "p1")])], new Set(["p1", "p2"]));
  assertEquals(got, []);
});

Deno.test("approvals are shown only in the Conversation whose Run asked", () => {
  const all = [
    { ...fetched("a"), conversationId: "c1" },
    { ...fetched("b", "r7"), conversationId: null },
    { ...fetched("c", "r8"), conversationId: "c2" },
  ];
  assertEquals(approvalsFor(all, "c1", new Set(["r7"])).map((p) => p.id), ["a", "b"]);
  assertEquals(approvalsFor(all, null, new Set()).map((p) => p.id), []);
});

function recorder(fail: "none" | "run" | "create" = "none") {
  const calls: { method: Method; path: string; body?: unknown }[] = [];
  const api = createApi((method, path, body) => {
    calls.push({ method, path, body });
    if (path.endsWith("/sessions") && method === "POST") {
      if (fail === "create") return Promise.reject({ code: "conversation_limit" });
      return Promise.resolve({
        session: conversationJson({ id: "c-new", title: (body as { title?: string }).title }),
      });
    }
    if (fail === "run") return Promise.reject({ code: "model_unavailable" });
    return Promise.resolve({ turn_id: "t1", run_id: "r1" });
  });
  return { api, calls };
}

const prefs = { draft: "", modelId: "qwen:7b", compactNext: false };

Deno.test("the first Enter in the empty state creates a titled Conversation, then its Turn", async () => {
  const { api, calls } = recorder();
  const r = await startFirstTurn(api, "ag", "  Plan\u0007 the\n\ntrip  ", prefs);
  assertEquals(r.ok && [r.conversation.id, r.turnId, r.runId], ["c-new", "t1", "r1"]);
  assertEquals(calls, [
    { method: "POST", path: "/api/agents/ag/sessions", body: { title: "Plan the trip" } },
    {
      method: "POST",
      path: "/api/agents/ag/sessions/c-new/runs",
      body: { message: "  Plan\u0007 the\n\ntrip  ", model_id: "qwen:7b" },
    },
  ]);
});

Deno.test("a refused first Turn still reports the new Conversation; a refused create rejects", async () => {
  const refused = await startFirstTurn(recorder("run").api, "ag", "hello", prefs);
  assertEquals(refused.ok, false);
  assertEquals(refused.conversation.id, "c-new");
  assertEquals(!refused.ok && (refused.error as { code: string }).code, "model_unavailable");
  const { api, calls } = recorder("create");
  const err = await startFirstTurn(api, "ag", "hello", prefs).catch((e) => e);
  assertEquals(err.code, "conversation_limit");
  assertEquals(calls.length, 1, "no Turn without a Conversation");
});

Deno.test("empty-state drafts are kept per Agent and never collide with a Conversation", () => {
  const drafts = createDraftStore();
  drafts.set(agentDraftKey("a1"), { draft: "for a1" });
  drafts.set(agentDraftKey("a2"), { draft: "for a2" });
  drafts.set("a1", { draft: "a conversation id" });
  assertEquals(drafts.get(agentDraftKey("a1")).draft, "for a1");
  assertEquals(drafts.get(agentDraftKey("a2")).draft, "for a2");
  assertEquals(agentDraftKey("a1").includes(":"), true);
});
