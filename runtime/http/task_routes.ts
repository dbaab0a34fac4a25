/**
 * Background Task routes [EX-6, §22]: `GET /api/agents/<agent>/tasks`,
 * `GET …/tasks/<task>` (session), `POST …/tasks/<task>/cancel` (CSRF).
 *
 * What this file enforces: no query parameters (422); malformed or unknown
 * Task ids are 404 `task_not_found`; cancelling a Task that is not running is
 * 409 `task_not_active`; a cancel answers once every process of the Task is
 * gone (the runner's proof), with the Task's final row. The logic is
 * runtime/tasks/task_manager.ts's.
 */
import { AppError } from "../errors.ts";
import { TASKS_ACTIVE_PER_AGENT_MAX } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import { CancelTaskResponse, TaskListResponse, TaskResponse } from "../protocol/api.ts";
import type { TaskManager } from "../tasks/task_manager.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";
import { NoQuery } from "./body.ts";

function taskParam(ctx: Pick<RouteContext, "params">): string {
  const id = ctx.params.task;
  if (!isValidId(id)) throw new AppError("task_not_found");
  return id;
}

export function taskRoutes(deps: { tasks: TaskManager }): ProductRoute[] {
  const base = "/api/agents/:agent/tasks";
  return [
    {
      method: "GET",
      path: base,
      auth: "session",
      query: NoQuery,
      response: TaskListResponse,
      handler: (ctx) => {
        const tasks = deps.tasks.list(agentParam(ctx));
        return reply(TaskListResponse, {
          tasks,
          active: tasks.filter((t) => t.status === "running").length,
          active_max: TASKS_ACTIVE_PER_AGENT_MAX,
        });
      },
    },
    {
      method: "GET",
      path: `${base}/:task`,
      auth: "session",
      query: NoQuery,
      response: TaskResponse,
      handler: (ctx) => {
        return reply(TaskResponse, { task: deps.tasks.get(agentParam(ctx), taskParam(ctx)) });
      },
    },
    {
      method: "POST",
      path: `${base}/:task/cancel`,
      auth: "csrf",
      query: NoQuery,
      response: CancelTaskResponse,
      handler: async (ctx) => {
        const agent = agentParam(ctx);
        const task = taskParam(ctx);
        await deps.tasks.cancel(agent, task);
        return reply(CancelTaskResponse, { task: deps.tasks.get(agent, task) });
      },
    },
  ];
}
