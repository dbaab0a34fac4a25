/**
 * Skills through the real server [LC-3, §22]: archives built here are
 * installed with `POST /api/agents/<agent>/skills` (raw body, X-Skill-SHA256),
 * listed, inspected and removed; every refusal is its fixed code with nothing
 * stored; ≤ 16 per Agent. In a real Run the scripted Ollama calls
 * `skill__<name>`: the call waits for an approval naming the skill, its
 * digest and the full arguments, runs in the runner, and the script's answer
 * reaches the model as the tool result.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
} from "../helpers/runs.ts";
import { sha256Hex, skillArchive } from "../helpers/skill_archive.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { SKILL_ARCHIVE_MAX_BYTES, SKILLS_PER_AGENT_MAX } from "../../runtime/limits.ts";

async function install(h: RunHarness, bytes: Uint8Array, digest?: string) {
  const res = await fetch(`${h.server.url}/api/agents/${h.agent}/skills`, {
    method: "POST",
    headers: h.session.headers({
      "content-type": "application/gzip",
      "x-skill-sha256": digest ?? await sha256Hex(bytes),
    }),
    body: bytes as BodyInit,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function names(h: RunHarness): Promise<string[]> {
  const r = await h.api("GET", `/api/agents/${h.agent}/skills`);
  assertEquals(r.status, 200);
  return r.body.skills.map((s: { name: string }) => s.name);
}

const UPPER = `const a = JSON.parse(await new Response(Deno.stdin.readable).text());
console.log(a.text.toUpperCase());
`;
const UPPER_ARGS = {
  type: "object",
  properties: { text: { type: "string", description: "Text to shout.", maxLength: 200 } },
  required: ["text"],
};

Deno.test("skills API: install, list, inspect, remove; every refusal is its fixed code and stores nothing", async (t) => {
  const h = await startRunHarness();
  try {
    const good = skillArchive(
      { name: "shout", description: "Upper-cases text.", args: UPPER_ARGS },
      UPPER,
    );

    await t.step(
      "refusals: wrong digest, missing digest, extra file, symlink, oversized member, too large",
      async () => {
        const cases: [Uint8Array, string | undefined, number, string][] = [
          [good, "0".repeat(64), 422, "skill_digest_mismatch"],
          [good, "", 422, "skill_digest_missing"],
          [
            skillArchive({ name: "extra" }, UPPER, [{ path: "notes.txt", data: "x" }]),
            undefined,
            422,
            "skill_extra_file",
          ],
          [
            skillArchive({ name: "link" }, UPPER, [{ path: "evil", link: "symlink" }]),
            undefined,
            422,
            "skill_link_refused",
          ],
          [
            skillArchive({ name: "huge" }, "x".repeat(16 * 1024 + 1)),
            undefined,
            422,
            "skill_member_too_large",
          ],
          [new Uint8Array(SKILL_ARCHIVE_MAX_BYTES + 1), undefined, 413, "skill_archive_too_large"],
        ];
        for (const [bytes, digest, status, code] of cases) {
          const r = await install(h, bytes, digest);
          assertEquals([r.status, r.body?.error?.code], [status, code]);
        }
        assertEquals(await names(h), []);
      },
    );

    await t.step(
      "install → 201 with the skill; list, inspect (manifest, digest, source), duplicate refused",
      async () => {
        const r = await install(h, good);
        assertEquals(r.status, 201);
        assertEquals(r.body.skill.name, "shout");
        assertEquals(r.body.skill.tool_id, "skill/shout");
        assertEquals(r.body.skill.digest, await sha256Hex(good));
        assertEquals(r.body.skill.args, ["text"]);
        assertEquals(await names(h), ["shout"]);
        const d = await h.api("GET", `/api/agents/${h.agent}/skills/shout`);
        assertEquals(d.status, 200);
        assertEquals(d.body.skill.source, UPPER);
        assertEquals(d.body.skill.manifest.args, UPPER_ARGS);
        assertEquals(JSON.parse(d.body.skill.manifest_text).name, "shout");
        const again = await install(h, good);
        assertEquals([again.status, again.body.error.code], [409, "skill_exists"]);
        const missing = await h.api("GET", `/api/agents/${h.agent}/skills/nope`);
        assertEquals([missing.status, missing.body.error.code], [404, "skill_not_found"]);
      },
    );

    await t.step(
      "inspect makes hidden characters of the source visible; the exact source stays",
      async () => {
        const sneaky = 'const ok = "admin\u202E\u2066";\tconsole.log(ok);\n';
        const r = await install(
          h,
          skillArchive({ name: "sneaky", description: "a\u202Eb" }, sneaky),
        );
        assertEquals(r.status, 201);
        assertEquals(r.body.skill.description, "a\\u{202E}b");
        const d = await h.api("GET", `/api/agents/${h.agent}/skills/sneaky`);
        assertEquals(d.body.skill.source, sneaky);
        assertEquals(d.body.skill.hidden_characters, 2);
        assertEquals(
          d.body.skill.source_visible,
          'const ok = "admin\\u{202E}\\u{2066}";\tconsole.log(ok);\n',
        );
        assert(d.body.skill.manifest_text.includes("a\\u{202E}b"));
        assertEquals((await h.api("DELETE", `/api/agents/${h.agent}/skills/sneaky`)).status, 200);
      },
    );

    await t.step("16 skills per Agent: the 16th is accepted, the 17th is skill_limit", async () => {
      for (let i = 2; i <= SKILLS_PER_AGENT_MAX; i++) {
        const r = await install(h, skillArchive({ name: `s${i}` }, UPPER));
        assertEquals(r.status, 201, `skill ${i}`);
      }
      assertEquals((await names(h)).length, SKILLS_PER_AGENT_MAX);
      const r = await install(h, skillArchive({ name: "one-too-many" }, UPPER));
      assertEquals([r.status, r.body.error.code], [409, "skill_limit"]);
      for (let i = 2; i <= SKILLS_PER_AGENT_MAX; i++) {
        const d = await h.api("DELETE", `/api/agents/${h.agent}/skills/s${i}`);
        assertEquals(d.status, 200);
      }
      assertEquals(await names(h), ["shout"]);
      const gone = await h.api("DELETE", `/api/agents/${h.agent}/skills/s2`);
      assertEquals([gone.status, gone.body.error.code], [404, "skill_not_found"]);
    });

    await t.step("the install needs the CSRF token", async () => {
      const bytes = skillArchive({ name: "nocsrf" }, UPPER);
      const res = await fetch(`${h.server.url}/api/agents/${h.agent}/skills`, {
        method: "POST",
        headers: {
          cookie: h.session.headers().cookie,
          origin: h.server.origin,
          "x-skill-sha256": await sha256Hex(bytes),
        },
        body: bytes as BodyInit,
      });
      assertEquals(res.status, 403);
      await res.body?.cancel();
      assertEquals(await names(h), ["shout"]);
    });
  } finally {
    await h.close();
  }
});

// deno-lint-ignore no-explicit-any
function toolMessages(body: any): string[] {
  // deno-lint-ignore no-explicit-any
  return body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content);
}

Deno.test("a Run calls a skill: approval names skill, digest and arguments; the script's answer reaches the model", async () => {
  const h = await startRunHarness();
  try {
    const bytes = skillArchive(
      { name: "shout", description: "Upper-cases text.", args: UPPER_ARGS },
      UPPER,
    );
    assertEquals((await install(h, bytes)).status, 201);
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "skill__shout", arguments: { text: "quiet please" } }]),
      scenarios.text("It shouted."),
    );
    const r = await submit(h, conv, "shout it");
    assertEquals(r.status, 202);
    const frames = await readSse(h, r.body.run_id, {
      until: (f) => f.event === "permission.requested",
    });
    const p = frames.at(-1)!.data.payload;
    assertEquals(p.tool_id, "skill/shout");
    assert(
      p.preview.includes("Skill: shout\nScript: main.ts (archive sha256 " + await sha256Hex(bytes)),
      p.preview,
    );
    assert(p.preview.includes('"text": "quiet please"'), p.preview);
    // The skill was offered to the model as a provider tool with its schema.
    const offered =
      (h.ollama.chats.at(-1)!.body.tools as { function: { name: string; parameters: unknown } }[])
        .find((x) => x.function.name === "skill__shout");
    assert(offered !== undefined);
    const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
      decision: "approve",
    });
    assertEquals(d.status, 200);
    const all = await readSse(h, r.body.run_id);
    assertEquals(all.at(-1)!.event, "run.completed");
    const seen = toolMessages(h.ollama.chats.at(-1)!.body);
    assertEquals(seen.length, 1);
    const result = JSON.parse(seen[0]);
    assertEquals(result.skill, "shout");
    assertEquals(result.answer, "QUIET PLEASE\n");
    assertEquals(result.exit_code, 0);
    assertEquals(result.trust, "untrusted");
    const audit = await h.api(
      "GET",
      `/api/agents/${h.agent}/runs/${r.body.run_id}/capability-audit`,
    );
    const states = audit.body.entries.map((e: { kind: string; tool_id: string; state: string }) =>
      `${e.kind}:${e.tool_id}:${e.state}`
    );
    assertEquals(states.sort(), [
      "operation:skill/shout:succeeded",
      "permission:skill/shout:approved",
    ]);
  } finally {
    await h.close();
  }
});

Deno.test("a skill call with arguments outside its schema never runs: tool_invalid_arguments, no approval", async () => {
  const h = await startRunHarness();
  try {
    assertEquals(
      (await install(h, skillArchive({ name: "shout", args: UPPER_ARGS }, UPPER))).status,
      201,
    );
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "skill__shout", arguments: { text: "x".repeat(801) } }]),
      scenarios.text("Refused."),
    );
    const r = await submit(h, conv, "too long");
    const frames = await readSse(h, r.body.run_id);
    assertEquals(frames.at(-1)!.event, "run.completed");
    assertEquals(frames.some((f) => f.event === "permission.requested"), false);
    assertEquals(toolMessages(h.ollama.chats.at(-1)!.body), ['{"error":"tool_invalid_arguments"}']);
  } finally {
    await h.close();
  }
});

Deno.test("a skill replaced while its call waits for approval never runs: the approved digest is gone, skill_not_found", async () => {
  const h = await startRunHarness();
  try {
    const first = skillArchive({ name: "shout", args: UPPER_ARGS }, UPPER);
    assertEquals((await install(h, first)).status, 201);
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "skill__shout", arguments: { text: "x" } }]),
      scenarios.text("Gone."),
    );
    const r = await submit(h, conv, "shout");
    const frames = await readSse(h, r.body.run_id, {
      until: (f) => f.event === "permission.requested",
    });
    const p = frames.at(-1)!.data.payload;
    // The operator swaps the script under the same name (and the same manifest) meanwhile.
    assertEquals((await h.api("DELETE", `/api/agents/${h.agent}/skills/shout`)).status, 200);
    const swapped = skillArchive(
      { name: "shout", args: UPPER_ARGS },
      'console.log("something else");\n',
    );
    assertEquals((await install(h, swapped)).status, 201);
    await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
      decision: "approve",
    });
    const all = await readSse(h, r.body.run_id);
    assertEquals(all.at(-1)!.event, "run.completed");
    assertEquals(toolMessages(h.ollama.chats.at(-1)!.body), ['{"error":"skill_not_found"}']);
  } finally {
    await h.close();
  }
});
