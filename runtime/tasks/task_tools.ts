/**
 * The task tools [EX-6]: `task/status {task_id}` and `task/output {task_id}`
 * read a background Task of the Run's Agent (any Task of that Agent, started
 * in this Turn or an earlier one). Both are read-only and `allow` by default
 * (an operator rule may tighten them to `deny`; under `ask` they are not
 * executed — see docs/tasks.md). Unknown or malformed ids are `task_not_found`;
 * a Run without the Task service (no runner) gets `tool_denied`.
 */
import type { ToolArgs } from "../tools/policy.ts";
import type { ExecResult } from "../exec/run_exec.ts";
import type { RunTasks } from "./task_manager.ts";

export const TASK_TOOL_EXECUTORS: Readonly<Record<string, string>> = Object.freeze({
  "task/status": "control-plane/task_status/v1",
  "task/output": "control-plane/task_output/v1",
});

export function readTaskTool(
  tasks: RunTasks | undefined,
  toolId: string,
  args: ToolArgs,
): ExecResult {
  if (!tasks) return { ok: false, code: "tool_denied" };
  if (toolId === "task/status") return tasks.status(args.task_id);
  if (toolId === "task/output") return tasks.output(args.task_id);
  return { ok: false, code: "tool_denied" };
}
