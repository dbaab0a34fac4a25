/**
 * Checkpoints and rewind against the real server [TL-11, §22]: file/edit and
 * file/write keep what they replace; `POST …/rewind` returns the plan without
 * touching anything, and confirmed restores each file byte for byte (deleting
 * the files the undone Turns created), leaves a file changed outside alone,
 * and branches the Conversation before the Turn while the original stays.
 * Refusals: a running Turn (409), a Turn of another Conversation (404), a
 * malformed body (422). The per-Agent bound (lowered through the test entry)
 * expires the oldest checkpoint at limit + 1, visibly in the plan.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { newConversation, type RunHarness, startRunHarness, submit } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { CHECKPOINT_MAX_ENV } from "../helpers/test_server_entry.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { exists } from "../helpers/home.ts";

function ws(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

const read = (path: string) =>
  scenarios.toolCall([{ name: "file__read_text", arguments: { path } }]);
const write = (path: string, content: string) =>
  scenarios.toolCall([{ name: "file__write", arguments: { path, content } }]);
const edit = (path: string, old_text: string, new_text: string) =>
  scenarios.toolCall([{ name: "file__edit", arguments: { path, old_text, new_text } }]);

/** Submits, approves every approval of the Run as it appears, waits for its terminal. */
async function turnApproving(
  h: RunHarness,
  conv: string,
  message: string,
): Promise<{ id: string; state: string }> {
  const r = await submit(h, conv, message);
  assertEquals(r.status, 202, JSON.stringify(r.body));
  const runId = r.body.run_id;
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const list = await h.api("GET", `/api/agents/${h.agent}/permissions`);
    for (const p of list.body.pending) {
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.id}`, { decision: "approve" });
    }
    const d = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    const t = d.body.turns.find((x: { run_id: string }) => x.run_id === runId);
    if (t && t.state !== "running") return t;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error("turn did not finish");
}

const rewindUrl = (h: RunHarness, conv: string) => `/api/agents/${h.agent}/sessions/${conv}/rewind`;

Deno.test("rewind restores files changed in two later Turns and leaves one changed outside", async (t) => {
  const h = await startRunHarness();
  try {
    const dir = ws(h);
    // Bytes that are not just ASCII, with no trailing newline: restored exactly.
    const A0 = "alpha — 1\r\nline two\n\tend";
    const B0 = "beta\n".repeat(200);
    const C0 = "gamma\n";
    Deno.writeTextFileSync(`${dir}/a.txt`, A0, { mode: 0o600 });
    Deno.mkdirSync(`${dir}/sub`, { mode: 0o755 });
    Deno.writeTextFileSync(`${dir}/sub/b.txt`, B0, { mode: 0o600 });
    Deno.writeTextFileSync(`${dir}/c.txt`, C0, { mode: 0o600 });
    const conv = await newConversation(h);
    h.ollama.enqueue(
      read("a.txt"),
      edit("a.txt", "line two", "LINE 2"),
      write("created.txt", "made by turn 1\n"),
      scenarios.text("Turn 1 done."),
    );
    const t1 = await turnApproving(h, conv, "turn 1: edit a.txt and create created.txt");
    assertEquals(t1.state, "completed");
    h.ollama.enqueue(
      read("sub/b.txt"),
      write("sub/b.txt", "beta rewritten\n"),
      read("c.txt"),
      write("c.txt", "gamma by turn 2\n"),
      read("a.txt"),
      edit("a.txt", "alpha", "ALPHA"),
      scenarios.text("Turn 2 done."),
    );
    const t2 = await turnApproving(h, conv, "turn 2: rewrite b, c and a again");
    assertEquals(t2.state, "completed");
    assertEquals(Deno.readTextFileSync(`${dir}/a.txt`), "ALPHA — 1\r\nLINE 2\n\tend");
    // The operator changes c.txt outside the product after Turn 2.
    Deno.writeTextFileSync(`${dir}/c.txt`, "changed outside\n");

    await t.step("without confirm the answer is the plan and nothing changes", async () => {
      const r = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id });
      assertEquals(r.status, 200, JSON.stringify(r.body));
      assertEquals(r.body.confirmed, false);
      assertEquals(r.body.session, null);
      assertEquals(
        r.body.files.map((f: { path: string; action: string; status: string }) =>
          `${f.path}:${f.action}:${f.status}`
        ),
        [
          "a.txt:restore:revert",
          "c.txt:restore:changed_since",
          "created.txt:delete:revert",
          "sub/b.txt:restore:revert",
        ],
      );
      assertEquals(Deno.readTextFileSync(`${dir}/sub/b.txt`), "beta rewritten\n");
      assert(exists(`${dir}/created.txt`));
    });

    await t.step("a plan from Turn 2 lists only what Turn 2 changed", async () => {
      const r = await h.api("POST", rewindUrl(h, conv), { turn_id: t2.id });
      assertEquals(
        r.body.files.map((f: { path: string; status: string }) => `${f.path}:${f.status}`),
        ["a.txt:revert", "c.txt:changed_since", "sub/b.txt:revert"],
      );
    });

    await t.step(
      "confirmed, files revert byte for byte and the Conversation branches",
      async () => {
        const r = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, confirm: true });
        assertEquals(r.status, 201, JSON.stringify(r.body));
        assertEquals(r.body.confirmed, true);
        assertEquals(
          r.body.files.map((f: { path: string; status: string; reverted: boolean }) =>
            `${f.path}:${f.status}:${f.reverted}`
          ),
          [
            "a.txt:revert:true",
            "c.txt:changed_since:false",
            "created.txt:revert:true",
            "sub/b.txt:revert:true",
          ],
        );
        assertEquals(Deno.readFileSync(`${dir}/a.txt`), new TextEncoder().encode(A0));
        assertEquals(Deno.readFileSync(`${dir}/sub/b.txt`), new TextEncoder().encode(B0));
        assertEquals(Deno.readTextFileSync(`${dir}/c.txt`), "changed outside\n");
        assertEquals(exists(`${dir}/created.txt`), false);
        // No reserved temp is left behind.
        const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
        assertEquals(names, ["a.txt", "agent-builder.md", "c.txt", "sub"]);
        // The branch holds the Turns before Turn 1 (none); the original keeps both.
        const branch = r.body.session;
        assertEquals(branch.parent_id, conv);
        const bd = await h.api("GET", `/api/agents/${h.agent}/sessions/${branch.id}`);
        assertEquals(bd.body.turns.length, 0);
        const od = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
        assertEquals(od.body.turns.map((x: { id: string }) => x.id), [t1.id, t2.id]);
        // Both are navigable alternatives of Turn 1.
        const g = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}/branches`);
        assertEquals(g.body.groups.length, 1);
        assertEquals(g.body.groups[0].anchor_turn_id, t1.id);
        assertEquals(g.body.groups[0].index, 0);
        assertEquals(
          g.body.groups[0].members.map((m: { session_id: string }) => m.session_id),
          [conv, branch.id],
        );
      },
    );

    await t.step("a second rewind refuses everything: nothing is as Turn 2 left it", async () => {
      const r = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id });
      assertEquals(
        r.body.files.map((f: { path: string; status: string }) => `${f.path}:${f.status}`),
        [
          "a.txt:changed_since",
          "c.txt:changed_since",
          "created.txt:changed_since",
          "sub/b.txt:changed_since",
        ],
      );
    });

    await t.step(
      "a branch before a Turn copies the Turns before it; alternatives group",
      async () => {
        const cont = `/api/agents/${h.agent}/sessions/${conv}/continue`;
        const b = await h.api("POST", cont, { mode: "branch", before_turn_id: t2.id });
        assertEquals(b.status, 201, JSON.stringify(b.body));
        assertEquals(b.body.copied_turns, 1);
        const branch = b.body.session.id;
        h.ollama.enqueue(scenarios.text("an edited answer"));
        const own = await turnApproving(h, branch, "turn 2, edited");
        // Branching the branch before its first own Turn is another alternative of Turn 2.
        const b2 = await h.api("POST", `/api/agents/${h.agent}/sessions/${branch}/continue`, {
          mode: "branch",
          before_turn_id: own.id,
        });
        assertEquals(b2.status, 201);
        assertEquals(b2.body.session.parent_id, conv);
        const g = await h.api("GET", `/api/agents/${h.agent}/sessions/${branch}/branches`);
        assertEquals(g.body.groups.length, 1);
        assertEquals(g.body.groups[0].anchor_turn_id, own.id);
        assertEquals(g.body.groups[0].index, 1);
        assertEquals(
          g.body.groups[0].members.map((
            m: { session_id: string; turn_id: string | null },
          ) => [m.session_id, m.turn_id]),
          [[conv, t2.id], [branch, own.id], [b2.body.session.id, null]],
        );
        const bad = await h.api("POST", cont, { mode: "continue", before_turn_id: t2.id });
        assertEquals(bad.status, 422);
        const foreign = await h.api("POST", `/api/agents/${h.agent}/sessions/${branch}/continue`, {
          mode: "branch",
          before_turn_id: t2.id,
        });
        assertEquals(codeOf(foreign), "turn_not_found");
      },
    );

    await t.step(
      "a Turn of another Conversation is turn_not_found; bad bodies are 422",
      async () => {
        const other = await newConversation(h);
        const r = await h.api("POST", rewindUrl(h, other), { turn_id: t1.id });
        assertEquals(r.status, 404);
        assertEquals(codeOf(r), "turn_not_found");
        const bad = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, confirm: "yes" });
        assertEquals(bad.status, 422);
        const extra = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, path: "a.txt" });
        assertEquals(extra.status, 422);
        const junk = await h.api("POST", rewindUrl(h, conv), { turn_id: "../../x" });
        assertEquals(codeOf(junk), "turn_not_found");
      },
    );

    await t.step(
      "a rewind while a Turn of the Conversation runs is 409 and changes nothing",
      async () => {
        h.ollama.enqueue(
          read("a.txt"),
          write("a.txt", "pending\n"),
        );
        const r = await submit(h, conv, "turn 3 waits on its approval");
        const runId = r.body.run_id;
        let pending: { id: string }[] = [];
        const end = Date.now() + 20_000;
        while (pending.length === 0 && Date.now() < end) {
          pending = (await h.api("GET", `/api/agents/${h.agent}/permissions`)).body.pending;
        }
        assertEquals(pending.length, 1);
        const before = Deno.readFileSync(`${dir}/a.txt`);
        for (const confirm of [false, true]) {
          const rw = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, confirm });
          assertEquals(rw.status, 409);
          assertEquals(codeOf(rw), "conversation_busy");
        }
        assertEquals(Deno.readFileSync(`${dir}/a.txt`), before);
        await h.api("POST", `/api/agents/${h.agent}/runs/${runId}/cancel`);
      },
    );
  } finally {
    await h.close();
  }
});

Deno.test("the per-Agent checkpoint bound expires the oldest at limit + 1, visibly, across a restart", async () => {
  // 20 bytes: two 10-byte checkpoints fit exactly; one more byte expires the oldest.
  const env = { [CHECKPOINT_MAX_ENV]: "20" };
  const ollama = await startFakeOllama();
  let h = await startRunHarness({ env, ollama });
  try {
    const dir = ws(h);
    for (const n of ["p", "q", "r"]) Deno.writeTextFileSync(`${dir}/${n}.txt`, "0123456789");
    Deno.writeTextFileSync(`${dir}/r.txt`, "9");
    const conv = await newConversation(h);
    h.ollama.enqueue(read("p.txt"), write("p.txt", "P"), scenarios.text("1"));
    const t1 = await turnApproving(h, conv, "p");
    h.ollama.enqueue(read("q.txt"), write("q.txt", "Q"), scenarios.text("2"));
    await turnApproving(h, conv, "q");
    const atLimit = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id });
    assertEquals(
      atLimit.body.files.map((f: { path: string; status: string }) => `${f.path}:${f.status}`),
      ["p.txt:revert", "q.txt:revert"],
    );
    h.ollama.enqueue(read("r.txt"), write("r.txt", "R"), scenarios.text("3"));
    await turnApproving(h, conv, "r");
    // Checkpoints are durable: a restarted server plans and rewinds from them.
    await h.server.stop();
    h = await startRunHarness({ env, home: h.server.home, ollama });
    const past = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id });
    assertEquals(
      past.body.files.map((f: { path: string; status: string }) => `${f.path}:${f.status}`),
      ["p.txt:expired", "q.txt:revert", "r.txt:revert"],
    );
    // At the Conversation cap the rewind cannot branch: refused before any file is touched.
    const have = (await h.api("GET", `/api/agents/${h.agent}/sessions`)).body.sessions.length;
    const extra: string[] = [];
    for (let i = have; i < 100; i++) extra.push(await newConversation(h));
    const full = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, confirm: true });
    assertEquals(full.status, 409);
    assertEquals(codeOf(full), "conversation_limit");
    assertEquals(Deno.readTextFileSync(`${dir}/q.txt`), "Q");
    await h.api("DELETE", `/api/agents/${h.agent}/sessions/${extra[0]}`);
    const done = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, confirm: true });
    assertEquals(
      done.body.files.map((f: { path: string; status: string; reverted: boolean }) =>
        `${f.path}:${f.status}:${f.reverted}`
      ),
      ["p.txt:expired:false", "q.txt:revert:true", "r.txt:revert:true"],
    );
    assertEquals(Deno.readTextFileSync(`${dir}/p.txt`), "P");
    assertEquals(Deno.readTextFileSync(`${dir}/q.txt`), "0123456789");
    assertEquals(Deno.readTextFileSync(`${dir}/r.txt`), "9");
  } finally {
    await h.close();
    await ollama.close();
  }
});

Deno.test("a directory swapped for a symlink is refused: nothing outside the workspace is touched", async () => {
  const h = await startRunHarness();
  const outside = Deno.makeTempDirSync({ prefix: "rewind-outside-" });
  try {
    const dir = ws(h);
    Deno.mkdirSync(`${dir}/d`, { mode: 0o755 });
    Deno.writeTextFileSync(`${dir}/top.txt`, "top\n", { mode: 0o600 });
    const conv = await newConversation(h);
    h.ollama.enqueue(
      write("d/x.txt", "created\n"),
      read("top.txt"),
      write("top.txt", "changed\n"),
      scenarios.text("Done."),
    );
    const t1 = await turnApproving(h, conv, "create d/x.txt and change top.txt");
    assertEquals(t1.state, "completed");
    // The attack: the directory becomes a link to an outside one holding the same file.
    Deno.writeTextFileSync(`${outside}/x.txt`, "created\n");
    Deno.renameSync(`${dir}/d`, `${dir}/d-real`);
    Deno.symlinkSync(outside, `${dir}/d`);
    const r = await h.api("POST", rewindUrl(h, conv), { turn_id: t1.id, confirm: true });
    assertEquals(r.status, 201);
    assertEquals(
      r.body.files.map((f: { path: string; status: string; reverted: boolean }) =>
        `${f.path}:${f.status}:${f.reverted}`
      ),
      ["d/x.txt:changed_since:false", "top.txt:revert:true"],
    );
    assertEquals(Deno.readTextFileSync(`${outside}/x.txt`), "created\n");
    assertEquals(Deno.readTextFileSync(`${dir}/d-real/x.txt`), "created\n");
    assertEquals(Deno.readTextFileSync(`${dir}/top.txt`), "top\n");
  } finally {
    await h.close();
    Deno.removeSync(outside, { recursive: true });
  }
});
