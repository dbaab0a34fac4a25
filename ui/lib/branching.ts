/**
 * Edit, regenerate, branch navigation and rewind [UI-8, TL-11] as API calls
 * and pure helpers: a branch before a Turn (`continue {mode: "branch",
 * before_turn_id}`), the alternatives of a Conversation (`GET …/branches`),
 * and the rewind plan / confirmation (`POST …/rewind`). Every answer is
 * parsed with the shared response schema.
 */
import {
  BranchesResponse,
  type BranchGroupJson,
  BranchResponse,
  RewindResponse,
} from "../../runtime/protocol/api.ts";
import type { Requester } from "./endpoints.ts";

export type { BranchGroupJson };
export type RewindAnswer = ReturnType<typeof RewindResponse.parse>;

const e = encodeURIComponent;
const convPath = (a: string, c: string) => `/api/agents/${e(a)}/sessions/${e(c)}`;

/** A new Conversation holding the completed Turns before `turnId`; its id. */
export async function branchBefore(
  request: Requester,
  agent: string,
  conv: string,
  turnId: string,
): Promise<string> {
  const r = await request("POST", `${convPath(agent, conv)}/continue`, {
    mode: "branch",
    before_turn_id: turnId,
  });
  return BranchResponse.parse(r).session.id;
}

export async function listBranches(
  request: Requester,
  agent: string,
  conv: string,
): Promise<BranchGroupJson[]> {
  return BranchesResponse.parse(await request("GET", `${convPath(agent, conv)}/branches`)).groups;
}

export async function rewind(
  request: Requester,
  agent: string,
  conv: string,
  turnId: string,
  confirm: boolean,
): Promise<RewindAnswer> {
  const body = confirm ? { turn_id: turnId, confirm: true } : { turn_id: turnId };
  return RewindResponse.parse(await request("POST", `${convPath(agent, conv)}/rewind`, body));
}

/** The ‹ i/n › of one Turn: its group, if the Turn is where alternatives diverge. */
export function groupAt(
  groups: readonly BranchGroupJson[],
  turnId: string,
): BranchGroupJson | null {
  return groups.find((g) => g.anchor_turn_id === turnId) ?? null;
}

/** The member `step` away from the current one (no wrap-around), or null. */
export function neighbour(
  g: BranchGroupJson,
  step: -1 | 1,
): BranchGroupJson["members"][number] | null {
  return g.members[g.index + step] ?? null;
}

const STATUS_TEXT: Record<string, string> = {
  revert: "will be restored",
  changed_since: "changed since — left alone",
  expired: "checkpoint expired — left alone",
  too_large: "too large to keep — left alone",
};

/** One line of the plan as the dialog shows it. */
export function planLine(f: RewindAnswer["files"][number]): string {
  if (f.status === "revert" && f.action === "delete") {
    return "created by these turns — will be deleted";
  }
  return STATUS_TEXT[f.status] ?? f.status;
}
