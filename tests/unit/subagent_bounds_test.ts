import { assertEquals } from "../helpers/assert.ts";
import {
  boundAnswer,
  childConversationTitle,
  type DelegationFacts,
  delegationRefusal,
} from "../../runtime/subagents/bounds.ts";
import {
  SUBAGENT_ANSWER_MAX_BYTES,
  SUBAGENT_MESSAGE_MAX_BYTES,
  SUBAGENTS_ACTIVE_MAX,
} from "../../runtime/limits.ts";

const OK: DelegationFacts = {
  parentAgentId: "a",
  targetAgentId: "b",
  messageBytes: 10,
  parentIsChild: false,
  parentDelegations: 0,
  targetState: "active",
  targetBusy: false,
  activeDelegations: 0,
};

const cases: { name: string; facts: Partial<DelegationFacts>; code: string | null }[] = [
  { name: "an idle active delegate", facts: {}, code: null },
  {
    name: "a message at the bound",
    facts: { messageBytes: SUBAGENT_MESSAGE_MAX_BYTES },
    code: null,
  },
  {
    name: "a message one byte past the bound",
    facts: { messageBytes: SUBAGENT_MESSAGE_MAX_BYTES + 1 },
    code: "subagent_message_too_large",
  },
  { name: "a child Run (depth 1)", facts: { parentIsChild: true }, code: "subagent_depth" },
  {
    name: "a second delegation of one Run",
    facts: { parentDelegations: 1 },
    code: "subagent_parent_limit",
  },
  { name: "the parent's own Agent", facts: { targetAgentId: "a" }, code: "subagent_self" },
  { name: "a gone Agent", facts: { targetState: "absent" }, code: "subagent_target_unavailable" },
  { name: "an upgrading Agent", facts: { targetState: "upgrading" }, code: "subagent_busy" },
  { name: "an Agent with a Run", facts: { targetBusy: true }, code: "subagent_busy" },
  {
    name: "one below the server-wide bound",
    facts: { activeDelegations: SUBAGENTS_ACTIVE_MAX - 1 },
    code: null,
  },
  {
    name: "the server-wide bound reached",
    facts: { activeDelegations: SUBAGENTS_ACTIVE_MAX },
    code: "subagent_limit",
  },
  {
    name: "several faults: the message size is named first",
    facts: { messageBytes: 5000, targetAgentId: "a", parentIsChild: true },
    code: "subagent_message_too_large",
  },
];

for (const c of cases) {
  Deno.test(`delegationRefusal(): ${c.name} → ${c.code ?? "allowed"}`, () => {
    assertEquals(delegationRefusal({ ...OK, ...c.facts }), c.code);
  });
}

Deno.test("boundAnswer() keeps an answer at 8 KiB and cuts one past it on a code point", () => {
  const exact = "x".repeat(SUBAGENT_ANSWER_MAX_BYTES);
  assertEquals(boundAnswer(exact), {
    body: exact,
    bytes: SUBAGENT_ANSWER_MAX_BYTES,
    truncated: false,
  });
  const over = boundAnswer("x".repeat(SUBAGENT_ANSWER_MAX_BYTES - 1) + "é");
  assertEquals(over.body, "x".repeat(SUBAGENT_ANSWER_MAX_BYTES - 1));
  assertEquals([over.bytes, over.truncated], [SUBAGENT_ANSWER_MAX_BYTES + 1, true]);
  const emoji = boundAnswer("😀".repeat(3000));
  assertEquals(new TextEncoder().encode(emoji.body).length, SUBAGENT_ANSWER_MAX_BYTES);
  assertEquals(emoji.body.isWellFormed(), true);
});

Deno.test("childConversationTitle() names the parent without controls and within 120 characters", () => {
  assertEquals(childConversationTitle("System Agent", "Planning"), "↳ System Agent · Planning");
  assertEquals(childConversationTitle("A\u202eB", "x\ny"), "↳ A B · x y");
  assertEquals([...childConversationTitle("n".repeat(200), "t")].length, 120);
  assertEquals(childConversationTitle("", ""), "↳ Agent · Conversation");
});
