/**
 * [UI-8, TL-11] the pure helpers behind ‹ i/n › and the rewind dialog: the
 * group shown at a Turn is the one anchored there; neighbours stop at the
 * ends (no wrap-around); every plan status reads as a sentence.
 */
import { groupAt, neighbour, planLine } from "../../ui/lib/branching.ts";
import { assertEquals } from "../helpers/assert.ts";

const group = (anchor: string | null, index: number, ids: string[]) => ({
  anchor_turn_id: anchor,
  index,
  members: ids.map((id) => ({ session_id: id, title: id, turn_id: null })),
});

Deno.test("the alternatives shown at a Turn are the group anchored there", () => {
  const gs = [group(null, 1, ["p", "me"]), group("t2", 0, ["me", "b"])];
  assertEquals(groupAt(gs, "t2")?.members.map((m) => m.session_id), ["me", "b"]);
  assertEquals(groupAt(gs, "t1"), null);
});

Deno.test("‹ and › move one alternative and stop at the ends", () => {
  const g = group("t", 1, ["a", "b", "c"]);
  assertEquals(neighbour(g, -1)?.session_id, "a");
  assertEquals(neighbour(g, 1)?.session_id, "c");
  assertEquals(neighbour(group("t", 0, ["a", "b"]), -1), null);
  assertEquals(neighbour(group("t", 1, ["a", "b"]), 1), null);
});

Deno.test("every rewind status reads as a sentence", () => {
  const f = (status: string, action = "restore") => ({
    path: "x",
    action: action as "restore" | "delete",
    status: status as "revert",
    reverted: false,
    code: null,
  });
  assertEquals(planLine(f("revert")), "will be restored");
  assertEquals(planLine(f("revert", "delete")), "created by these turns — will be deleted");
  assertEquals(planLine(f("changed_since")), "changed since — left alone");
  assertEquals(planLine(f("expired")), "checkpoint expired — left alone");
  assertEquals(planLine(f("too_large")), "too large to keep — left alone");
});
