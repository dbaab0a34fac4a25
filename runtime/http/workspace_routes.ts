/**
 * The operator's workspace routes [#18]: a read-only browser of an Agent's
 * workspace (`GET …/workspace/list?path=`, `GET …/workspace/file?path=` with
 * `download=1` for the raw bytes) and its instruction file
 * (`GET/POST …/instructions`). Thin adapters over
 * runtime/workspace/operator_files.ts, which opens every path
 * descriptor-anchored like the file tools; a refusal is its fixed code.
 * Reads need a session, the edit CSRF + same origin (the gateway).
 */
import { z } from "zod";
import type { AgentService } from "../agents/service.ts";
import { AppError, type ErrorCode } from "../errors.ts";
import { agentDataRel, type HomeLayout } from "../home.ts";
import { INSTRUCTION_FILE_MAX_BYTES } from "../limits.ts";
import type { Fail } from "../../linuxfs/fs_anchor.ts";
import {
  listWorkspaceDir,
  readInstructions,
  readWorkspaceFile,
  writeInstructions,
} from "../workspace/operator_files.ts";
import {
  InstructionsResponse,
  InstructionsWriteResponse,
  WorkspaceFileResponse,
  WorkspaceListResponse,
} from "../protocol/api.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";
import { NoQuery } from "./body.ts";

export const InstructionsBody = z.object({
  text: z.string().max(INSTRUCTION_FILE_MAX_BYTES),
  /** The digest the operator edited; null when the file did not exist. */
  base_digest: z.string().regex(/^sha256:[0-9a-f]{64}$|^[0-9a-f]{64}$/).nullable(),
  /** Only compute the diff the edit would write. @default false */
  dry_run: z.boolean().optional(),
}).strict();
export type InstructionsBody = z.infer<typeof InstructionsBody>;

/** Query schemas, checked by the server before the handler (unknown or repeated names: 422). */
const ListQuery = z.object({ path: z.string().optional() }).strict();
type ListQuery = z.infer<typeof ListQuery>;
const FileQuery = z.object({ path: z.string().optional(), download: z.string().optional() })
  .strict();
type FileQuery = z.infer<typeof FileQuery>;

function refuse(f: Fail): never {
  throw new AppError(f.code as ErrorCode);
}

/** `attachment; filename*=UTF-8''…` for the last path component. */
function attachmentName(path: string): string {
  const leaf = path.split("/").at(-1) ?? "file";
  return `attachment; filename*=UTF-8''${encodeURIComponent(leaf)}`;
}

export function workspaceRoutes(
  deps: { agents: AgentService; home: HomeLayout },
): ProductRoute[] {
  const dirOf = (ctx: Pick<RouteContext, "params">) => {
    const id = agentParam(ctx);
    const row = deps.agents.requireUsable(id);
    return {
      id,
      generation: row.generation,
      dir: `${deps.home.root}/${agentDataRel(id)}/workspace`,
    };
  };
  return [
    {
      method: "GET",
      path: "/api/agents/:agent/workspace/list",
      auth: "session",
      query: ListQuery,
      response: WorkspaceListResponse,
      handler: (ctx: RouteContext<unknown, ListQuery>) => {
        const r = listWorkspaceDir(dirOf(ctx).dir, ctx.query.path ?? ".");
        if (!r.ok) refuse(r);
        return reply(WorkspaceListResponse, {
          path: r.path,
          entries: r.entries,
          truncated: r.truncated,
        });
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/workspace/file",
      auth: "session",
      query: FileQuery,
      // JSON unless `download=1` (then the raw bytes as an attachment).
      response: WorkspaceFileResponse,
      handler: (ctx: RouteContext<unknown, FileQuery>) => {
        const q = ctx.query;
        const r = readWorkspaceFile(dirOf(ctx).dir, q.path ?? "");
        if (!r.ok) refuse(r);
        if (q.download === "1") {
          return new Response(new Uint8Array(r.bytes), {
            headers: {
              "content-type": "application/octet-stream",
              "content-disposition": attachmentName(r.path),
            },
          });
        }
        return reply(WorkspaceFileResponse, {
          path: r.path,
          size: r.size,
          modified_ms: r.modified_ms,
          text: r.text,
          binary: r.text === null,
        });
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/instructions",
      auth: "session",
      query: NoQuery,
      response: InstructionsResponse,
      handler: (ctx) => {
        const r = readInstructions(dirOf(ctx).dir);
        if (!r.ok) refuse(r);
        return reply(InstructionsResponse, { present: r.present, text: r.text, digest: r.digest });
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/instructions",
      auth: "csrf",
      body: InstructionsBody,
      query: NoQuery,
      response: InstructionsWriteResponse,
      handler: (ctx: RouteContext<InstructionsBody>) => {
        const a = dirOf(ctx);
        const r = writeInstructions(a.dir, ctx.body.text, ctx.body.base_digest, {
          agent_id: a.id,
          generation: a.generation,
          run_id: "operator",
          call_id: "instructions",
        }, ctx.body.dry_run === true);
        if (!r.ok) refuse(r);
        return reply(InstructionsWriteResponse, {
          diff: r.diff,
          committed: r.committed,
          digest: r.digest,
        });
      },
    },
  ];
}
