/**
 * Per-Agent policy inside real Runs [TL-9, TL-10, TL-12]: a real server, the
 * scripted Ollama asking for tools. Proves: an Agent allow rule really skips
 * the approval (and only inside its directory); a deny really refuses (and a
 * tool-wide deny is not even offered); the platform's .git deny refuses with
 * no approval; "Always allow" adds exactly the narrowed rule, audited, after
 * which the next call in that directory runs unasked and one in another
 * directory still asks; a matched prefix cannot be escaped with `..` or a
 * symlink; the approval carries a multi-hunk diff and its full diff is one
 * GET away; "Always allow" past the 64-rule bound refuses with nothing
 * changed and the approval still pending.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  submit,
} from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { exists } from "../helpers/home.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

async function putPolicy(h: RunHarness, rules: unknown[]): Promise<void> {
  const r = await h.api("PUT", `/api/agents/${h.agent}/policy`, { rules });
  assertEquals(r.status, 200, JSON.stringify(r.body));
}

async function finished(h: RunHarness, runId: string): Promise<SseFrame[]> {
  const frames = await readSse(h, runId);
  assertEquals(frames.at(-1)!.event, "run.completed");
  return frames;
}

async function pending(h: RunHarness, runId: string): Promise<Json> {
  const frames = await readSse(h, runId, { until: (f) => f.event === "permission.requested" });
  const req = frames.at(-1)!;
  assertEquals(req.event, "permission.requested");
  return req.data.payload;
}

const completions = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "tool.call.completed").map((f) =>
    `${f.data.payload.tool_id}:${f.data.payload.code ?? "ok"}`
  );
const asked = (frames: SseFrame[]) => frames.some((f) => f.event === "permission.requested");

/** One Run whose model makes `calls` one after another, then answers. */
async function runCalls(
  h: RunHarness,
  calls: { name: string; arguments: Record<string, unknown> }[],
) {
  const conv = await newConversation(h);
  h.ollama.enqueue(...calls.map((c) => scenarios.toolCall([c])), scenarios.text("Done."));
  const r = await submit(h, conv, "go");
  assertEquals(r.status, 202, JSON.stringify(r.body));
  return r.body.run_id as string;
}

const write = (path: string, content = "x\n") => ({
  name: "file__write",
  arguments: { path, content },
});

Deno.test("per-Agent policy decides real tool calls: allow skips, deny refuses, platform denies", async (t) => {
  const h = await startRunHarness();
  try {
    await t.step("an Agent allow rule skips the approval, inside its directory only", async () => {
      await putPolicy(h, [{ tool: "file/write", decision: "allow", path_prefix: "docs" }]);
      Deno.mkdirSync(`${workspace(h)}/docs/deep`, { recursive: true });
      const run = await runCalls(h, [write("docs/a.md"), write("docs/deep/b.md")]);
      const frames = await finished(h, run);
      assertEquals(asked(frames), false);
      assertEquals(completions(frames), ["file/write:ok", "file/write:ok"]);
      assertEquals(Deno.readTextFileSync(`${workspace(h)}/docs/a.md`), "x\n");
      assertEquals(Deno.readTextFileSync(`${workspace(h)}/docs/deep/b.md`), "x\n");
      // Outside the prefix (and a sibling whose name only starts like it) the default asks.
      for (const path of ["other.md", "docsx/c.md"]) {
        if (path.includes("/")) Deno.mkdirSync(`${workspace(h)}/docsx`, { recursive: true });
        const r2 = await runCalls(h, [write(path)]);
        const p = await pending(h, r2);
        assertEquals(p.tool_id, "file/write");
        await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "deny",
        });
        assertEquals(completions(await finished(h, r2)), ["file/write:tool_denied"]);
        assertEquals(exists(`${workspace(h)}/${path}`), false);
      }
    });

    await t.step("an Agent deny refuses the call and a tool-wide deny is not offered", async () => {
      Deno.mkdirSync(`${workspace(h)}/secret`, { recursive: true });
      Deno.writeTextFileSync(`${workspace(h)}/secret/key.txt`, "s3cret\n", { mode: 0o600 });
      Deno.writeTextFileSync(`${workspace(h)}/open.txt`, "open\n", { mode: 0o600 });
      await putPolicy(h, [
        { tool: "file/read_text", decision: "deny", path_prefix: "secret" },
        { tool: "file/grep", decision: "deny" },
      ]);
      const before = h.ollama.chats.length;
      const run = await runCalls(h, [
        { name: "file__read_text", arguments: { path: "secret/key.txt" } },
        { name: "file__read_text", arguments: { path: "open.txt" } },
      ]);
      const frames = await finished(h, run);
      assertEquals(asked(frames), false);
      assertEquals(completions(frames), ["file/read_text:tool_denied", "file/read_text:ok"]);
      const tools = (h.ollama.chats[before].body.tools as { function: { name: string } }[])
        .map((x) => x.function.name);
      assert(tools.includes("file__read_text"));
      assertEquals(tools.includes("file__grep"), false);
      // The model never saw the secret.
      const sent = JSON.stringify(h.ollama.chats.slice(before).map((c) => c.body.messages));
      assertEquals(sent.includes("s3cret"), false);
    });

    await t.step("an ask rule on a read tool makes it wait for an approval", async () => {
      await putPolicy(h, [{ tool: "file/read_text", decision: "ask" }]);
      const run = await runCalls(h, [{
        name: "file__read_text",
        arguments: { path: "open.txt" },
      }]);
      const p = await pending(h, run);
      assertEquals(p.tool_id, "file/read_text");
      // An Agent ask rule decided: an allow rule could never win over it, so none is offered.
      assertEquals(p.always_allow, null);
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "approve",
      });
      assertEquals(completions(await finished(h, run)), ["file/read_text:ok"]);
    });

    await t.step(
      "the platform's .git deny refuses writes there with no approval, even under a broad allow",
      async () => {
        await putPolicy(h, [{ tool: "file/write", decision: "allow" }]);
        Deno.mkdirSync(`${workspace(h)}/.git/hooks`, { recursive: true });
        Deno.mkdirSync(`${workspace(h)}/sub/.git`, { recursive: true });
        const run = await runCalls(h, [
          write(".git/hooks/pre-commit", "#!/bin/sh\necho owned\n"),
          write("sub/.git/config", "[core]\n"),
          write("fine.txt"),
        ]);
        const frames = await finished(h, run);
        assertEquals(asked(frames), false);
        assertEquals(completions(frames), [
          "file/write:tool_denied",
          "file/write:tool_denied",
          "file/write:ok",
        ]);
        assertEquals(exists(`${workspace(h)}/.git/hooks/pre-commit`), false);
        assertEquals(exists(`${workspace(h)}/sub/.git/config`), false);
      },
    );
  } finally {
    await h.close();
  }
});

Deno.test("Always allow adds exactly the narrowed rule; the next call there runs unasked, elsewhere still asks; no escape", async (t) => {
  const h = await startRunHarness();
  try {
    Deno.mkdirSync(`${workspace(h)}/notes`, { recursive: true });
    Deno.mkdirSync(`${workspace(h)}/src`, { recursive: true });
    await putPolicy(h, [{ tool: "file/read_text", decision: "deny", path_prefix: "src" }]);

    await t.step(
      "the approval offers the directory rule and a multi-hunk diff, full diff one GET away",
      async () => {
        const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
        Deno.writeTextFileSync(`${workspace(h)}/notes/a.md`, lines.join("\n") + "\n", {
          mode: 0o600,
        });
        const changed = lines.map((l, i) => i === 3 || i === 33 ? l.toUpperCase() : l);
        const run = await runCalls(h, [
          { name: "file__read_text", arguments: { path: "notes/a.md" } },
          write("notes/a.md", changed.join("\n") + "\n"),
          write("notes/b.md", "second\n"),
        ]);
        const p = await pending(h, run);
        assertEquals(p.always_allow, {
          tool: "file/write",
          decision: "allow",
          path_prefix: "notes",
        });
        assertEquals(p.preview.split("\n").filter((l: string) => l.startsWith("@@")), [
          "@@ -1,7 +1,7 @@",
          "@@ -31,7 +31,7 @@",
        ]);
        const full = await h.api(
          "GET",
          `/api/agents/${h.agent}/permissions/${p.permission_id}/diff`,
        );
        assertEquals(full.status, 200);
        assertEquals(full.body.diff, p.preview);
        assertEquals(p.full_diff_bytes, new TextEncoder().encode(p.preview).length);
        const listed = await h.api("GET", `/api/agents/${h.agent}/permissions`);
        assertEquals(listed.body.pending[0].always_allow, p.always_allow);

        const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
          always_allow: true,
        });
        assertEquals(d.status, 200, JSON.stringify(d.body));
        assertEquals(d.body.rule_added, p.always_allow);
        // The next call in the same directory (same Run) runs without asking.
        const frames = await finished(h, run);
        assertEquals(frames.filter((f) => f.event === "permission.requested").length, 1);
        assertEquals(completions(frames), ["file/read_text:ok", "file/write:ok", "file/write:ok"]);
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/notes/b.md`), "second\n");
        const v = (await h.api("GET", `/api/agents/${h.agent}/policy`)).body;
        assertEquals(v.rules, [
          { tool: "file/read_text", decision: "deny", path_prefix: "src" },
          { tool: "file/write", decision: "allow", path_prefix: "notes" },
        ]);
        assertEquals(v.audit[0].source, "always_allow");
        assertEquals(v.audit[0].added, [p.always_allow]);
        assertEquals(v.audit[0].removed, []);
      },
    );

    await t.step("the next matching call in another directory still asks", async () => {
      const run = await runCalls(h, [write("src/c.md")]);
      const p = await pending(h, run);
      assertEquals(p.always_allow, { tool: "file/write", decision: "allow", path_prefix: "src" });
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "deny",
      });
      assertEquals(completions(await finished(h, run)), ["file/write:tool_denied"]);
      assertEquals(exists(`${workspace(h)}/src/c.md`), false);
    });

    await t.step("a matched prefix cannot be escaped with .. or a symlink", async () => {
      Deno.symlinkSync("../src", `${workspace(h)}/notes/link`);
      const run = await runCalls(h, [
        write("notes/../src/d.md"),
        write("notes/link/e.md"),
        write("./notes/f.md"),
      ]);
      const frames = await finished(h, run);
      // `..` and `.` are not canonical: never matched, refused by the tool itself.
      // Through the symlink: matched by name, refused by the descriptor walk.
      assertEquals(asked(frames), false);
      const codes = completions(frames);
      assertEquals(codes[0], "file/write:path_invalid");
      assertEquals(codes[1], "file/write:path_symlink");
      assertEquals(codes[2], "file/write:path_invalid");
      assertEquals(exists(`${workspace(h)}/src/d.md`), false);
      assertEquals(exists(`${workspace(h)}/src/e.md`), false);
    });

    await t.step(
      "Always allow past 64 rules refuses with nothing changed and the approval pending",
      async () => {
        const rules = [
          { tool: "file/write", decision: "allow", path_prefix: "notes" },
          ...Array.from({ length: 63 }, (_, i) => ({
            tool: `exec/command:p${i}`,
            decision: "allow",
          })),
        ];
        await putPolicy(h, rules);
        const run = await runCalls(h, [write("src/g.md")]);
        const p = await pending(h, run);
        const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
          always_allow: true,
        });
        assertEquals(d.status, 422);
        assertEquals(codeOf(d), "policy_too_many_rules");
        const v = (await h.api("GET", `/api/agents/${h.agent}/policy`)).body;
        assertEquals(v.rules, rules);
        const listed = await h.api("GET", `/api/agents/${h.agent}/permissions`);
        assertEquals(listed.body.pending.map((x: Json) => x.id), [p.permission_id]);
        await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "deny",
        });
        assertEquals(completions(await finished(h, run)), ["file/write:tool_denied"]);
      },
    );

    await t.step("always_allow with deny is refused; a decided approval is 404", async () => {
      await putPolicy(h, []);
      const run = await runCalls(h, [write("src/h.md")]);
      const p = await pending(h, run);
      const bad = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "deny",
        always_allow: true,
      });
      assertEquals(codeOf(bad), "policy_always_unavailable");
      assertEquals((await h.api("GET", `/api/agents/${h.agent}/policy`)).body.rules, []);
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "deny",
      });
      await finished(h, run);
      const late = await h.api("GET", `/api/agents/${h.agent}/permissions/${p.permission_id}/diff`);
      assertEquals(late.status, 200, "the full diff stays readable after the decision");
      const none = await h.api(
        "GET",
        `/api/agents/${h.agent}/permissions/${crypto.randomUUID()}/diff`,
      );
      assertEquals(codeOf(none), "permission_not_found");
    });
  } finally {
    await h.close();
  }
});
