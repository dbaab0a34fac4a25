/**
 * Skill routes [LC-3, §22]: `GET /api/agents/<agent>/skills` (session),
 * `POST /api/agents/<agent>/skills` (CSRF; the raw `.tar.gz` as the body,
 * `X-Skill-SHA256: <hex of the archive>`; 201 with the skill),
 * `GET …/skills/<skill>` (session; inspect: manifest, digest, source) and
 * `DELETE …/skills/<skill>` (CSRF).
 *
 * What this file enforces: the body is read up to SKILL_ARCHIVE_MAX_BYTES
 * and no further (413 `skill_archive_too_large`, nothing stored); every other
 * refusal is the fixed code of runtime/skills/archive.ts or the store.
 */
import { AppError } from "../errors.ts";
import { SKILL_ARCHIVE_MAX_BYTES } from "../limits.ts";
import type { SkillService } from "../skills/service.ts";
import {
  SkillDeletedResponse,
  SkillDetailResponse,
  SkillResponse,
  SkillsResponse,
} from "../protocol/api.ts";
import { readBounded } from "./body.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";

export function skillRoutes(deps: { skills: SkillService }): ProductRoute[] {
  const { skills } = deps;
  return [
    {
      method: "GET",
      path: "/api/agents/:agent/skills",
      auth: "session",
      response: SkillsResponse,
      handler: (ctx) => reply(SkillsResponse, { skills: skills.list(agentParam(ctx)) }),
    },
    {
      method: "POST",
      path: "/api/agents/:agent/skills",
      auth: "csrf",
      response: SkillResponse,
      handler: async (ctx) => {
        const id = agentParam(ctx);
        let bytes: Uint8Array;
        try {
          bytes = await readBounded(ctx.req, SKILL_ARCHIVE_MAX_BYTES);
        } catch (err) {
          if (err instanceof AppError && err.code === "body_too_large") {
            throw new AppError("skill_archive_too_large");
          }
          throw err;
        }
        const skill = await skills.install(id, bytes, ctx.req.headers.get("x-skill-sha256"));
        return reply(SkillResponse, { skill }, 201);
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/skills/:skill",
      auth: "session",
      response: SkillDetailResponse,
      handler: (ctx) =>
        reply(SkillDetailResponse, { skill: skills.get(agentParam(ctx), ctx.params.skill) }),
    },
    {
      method: "DELETE",
      path: "/api/agents/:agent/skills/:skill",
      auth: "csrf",
      response: SkillDeletedResponse,
      handler: (ctx) => {
        const id = agentParam(ctx);
        skills.remove(id, ctx.params.skill);
        return reply(SkillDeletedResponse, { name: ctx.params.skill, deleted: true });
      },
    },
  ];
}
