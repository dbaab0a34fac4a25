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
import { agentParam } from "./agent_routes.ts";
import { json } from "./headers.ts";
import type { Route, RouteContext } from "./router.ts";

export const InstructionsBody = z.object({
  text: z.string().max(INSTRUCTION_FILE_MAX_BYTES),
  /** The digest the operator edited; null when the file did not exist. */
  base_digest: z.string().regex(/^sha256:[0-9a-f]{64}$|^[0-9a-f]{64}$/).nullable(),
  /** Only compute the diff the edit would write. @default false */
  dry_run: z.boolean().optional(),
}).strict();
export type InstructionsBody = z.infer<typeof InstructionsBody>;

function query(url: URL, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of url.searchParams) {
    if (!allowed.includes(k) || Object.hasOwn(out, k)) {
      throw new AppError("schema_violation", "query parameter");
    }
    out[k] = v;
  }
  return out;
}

function refuse(f: Fail): never {
  throw new AppError(f.code as ErrorCode);
}

/** `attachment; filename*=UTF-8''…` for the last path component. */
function attachmentName(path: string): string {
  const leaf = path.split("/").at(-1) ?? "file";
  return `attachment; filename*=UTF-8''${encodeURIComponent(leaf)}`;
}

export function workspaceRoutes(deps: { agents: AgentService; home: HomeLayout }): Route[] {
  const dirOf = (ctx: RouteContext<unknown>) => {
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
      handler: (ctx) => {
        const q = query(ctx.url, ["path"]);
        const r = listWorkspaceDir(dirOf(ctx).dir, q.path ?? ".");
        if (!r.ok) refuse(r);
        return json({ path: r.path, entries: r.entries, truncated: r.truncated });
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/workspace/file",
      auth: "session",
      handler: (ctx) => {
        const q = query(ctx.url, ["path", "download"]);
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
        return json({
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
      handler: (ctx) => {
        query(ctx.url, []);
        const r = readInstructions(dirOf(ctx).dir);
        if (!r.ok) refuse(r);
        return json({ present: r.present, text: r.text, digest: r.digest });
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/instructions",
      auth: "csrf",
      body: InstructionsBody,
      handler: (ctx: RouteContext<InstructionsBody>) => {
        query(ctx.url, []);
        const a = dirOf(ctx);
        const r = writeInstructions(a.dir, ctx.body.text, ctx.body.base_digest, {
          agent_id: a.id,
          generation: a.generation,
          run_id: "operator",
          call_id: "instructions",
        }, ctx.body.dry_run === true);
        if (!r.ok) refuse(r);
        return json({ diff: r.diff, committed: r.committed, digest: r.digest });
      },
    },
  ];
}
