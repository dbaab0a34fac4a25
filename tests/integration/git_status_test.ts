/**
 * git status in the context [CX-9], end to end with the real runner: no
 * repository ⇒ no git section; a repository ⇒ its branch, counts and paths
 * (git status --porcelain=v2 --branch run confined on a scratch copy, never
 * on the workspace) in the breakdown and in the model's system message; 64
 * paths are listed and the rest is a count.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { GIT_STATUS_PATHS_MAX } from "../../runtime/limits.ts";

function git(cwd: string, ...args: string[]) {
  const out = new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@example.org", ...args],
    cwd,
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!out.success) throw new Error(`git ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
}

Deno.test("the workspace's git status enters the context through the runner, bounded to 64 paths", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
    const gitPart = async () => {
      const p = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}/context-preview`);
      assertEquals(p.status, 200);
      return p.body.breakdown.parts.find((x: { name: string }) => x.name === "git").tokens;
    };
    const systemOfNextRun = async () => {
      const chats = h.ollama.chats.length;
      h.ollama.enqueue(scenarios.text("ok"));
      const r = await submit(h, conv, "status?");
      await readSse(h, r.body.run_id);
      return (h.ollama.chats[chats].body.messages as { content: string }[])[0].content;
    };

    await t.step("no repository: no git section", async () => {
      assertEquals(await gitPart(), 0);
      assert(!(await systemOfNextRun()).includes("Git status"));
    });

    await t.step("a repository: branch, counts and paths, the workspace untouched", async () => {
      git(ws, "init", "-q", "-b", "main");
      Deno.writeTextFileSync(`${ws}/a.txt`, "one\n");
      git(ws, "add", "a.txt");
      git(ws, "commit", "-q", "-m", "first");
      Deno.writeTextFileSync(`${ws}/a.txt`, "two\n");
      Deno.writeTextFileSync(`${ws}/new.txt`, "new\n");
      const indexBefore = Deno.statSync(`${ws}/.git/index`).mtime?.getTime();
      const sys = await systemOfNextRun();
      assert(sys.includes("Git status of the workspace"), sys);
      assert(sys.includes("Branch: main"), sys);
      // The workspace's own agent-builder.md is untracked too.
      assert(sys.includes("Changes: 3 (1 modified, 2 untracked)"), sys);
      assert(sys.includes(" M a.txt") && sys.includes("?  new.txt"), sys);
      assert((await gitPart()) > 0);
      assertEquals(Deno.statSync(`${ws}/.git/index`).mtime?.getTime(), indexBefore);
    });

    await t.step("64 paths are listed; more are a count", async () => {
      for (let i = 0; i < GIT_STATUS_PATHS_MAX + 6; i++) {
        Deno.writeTextFileSync(`${ws}/u${String(i).padStart(3, "0")}.txt`, "x\n");
      }
      // The collector reuses a result for 2 s: wait for a fresh one (a state, polled).
      let sys = "";
      for (let i = 0; i < 100 && !sys.includes("more paths not listed"); i++) {
        sys = await systemOfNextRun();
      }
      const listed = sys.split("\n").filter((l) => /^(\?| M) /.test(l));
      assertEquals(listed.length, GIT_STATUS_PATHS_MAX);
      assert(sys.includes(`Changes: ${GIT_STATUS_PATHS_MAX + 9} (1 modified,`), sys);
      assert(sys.includes("… and 9 more paths not listed"), sys);
    });
  } finally {
    await h.close();
  }
});
