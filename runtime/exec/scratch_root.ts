/**
 * Where an Agent's scratch copies live [EX-3]: `.runtime/agents/<agent>/scratch/<run>/`
 * (`work/` the copy, `tmp/` the command's private TMPDIR) — beside the Run roots, so the
 * Worker's Run-tree bound [SB-6] never counts a scratch copy, and inside the Agent's
 * runtime directory, so restart recovery removes every one of them.
 */
import { agentRuntimeRel } from "../home.ts";

export function scratchRootRel(agentId: string): string {
  return `${agentRuntimeRel(agentId)}/scratch`;
}
