/**
 * Checkpoints of exec/apply [TL-11, EX-5] through a real Run and the real
 * runner: each applied path keeps what it replaced — a modified file of
 * exactly 1 MiB is kept, one of 1 MiB + 1 is recorded `too_large`, a deleted
 * file is kept, an added one is recorded as "did not exist" — and a rewind
 * restores the kept ones byte for byte, deletes the added one, and leaves the
 * too-large one as it is.
 */
import { assertEquals } from "../helpers/assert.ts";
import { newConversation, type RunHarness, startRunHarness, submit } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { CHECKPOINT_FILE_MAX_BYTES } from "../../runtime/limits.ts";
import { exists } from "../helpers/home.ts";

function ws(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

async function turnApproving(h: RunHarness, conv: string, message: string) {
  const r = await submit(h, conv, message);
  assertEquals(r.status, 202, JSON.stringify(r.body));
  const end = Date.now() + 120_000;
  while (Date.now() < end) {
    const list = await h.api("GET", `/api/agents/${h.agent}/permissions`);
    for (const p of list.body.pending) {
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.id}`, { decision: "approve" });
    }
    const d = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    const t = d.body.turns.find((x: { run_id: string }) => x.run_id === r.body.run_id);
    if (t && t.state !== "running") return t;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error("turn did not finish");
}

Deno.test("exec/apply keeps checkpoints within the per-file bound and a rewind uses them", async () => {
  const h = await startRunHarness();
  try {
    const dir = ws(h);
    const atLimit = "a" + "x".repeat(CHECKPOINT_FILE_MAX_BYTES - 1);
    const pastLimit = "a" + "y".repeat(CHECKPOINT_FILE_MAX_BYTES);
    Deno.writeTextFileSync(`${dir}/keep.txt`, atLimit, { mode: 0o644 });
    Deno.writeTextFileSync(`${dir}/big.txt`, pastLimit, { mode: 0o644 });
    Deno.writeTextFileSync(`${dir}/gone.txt`, "bye\n", { mode: 0o644 });
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{
        name: "exec__command",
        arguments: {
          argv: [
            "sh",
            "-c",
            "sed -i 's/^a/b/' keep.txt big.txt && rm gone.txt && printf 'made\\n' > made.txt",
          ],
        },
      }]),
      scenarios.toolCall([{ name: "exec__apply", arguments: {} }]),
      scenarios.text("Applied."),
    );
    const t = await turnApproving(h, conv, "change files with a command");
    assertEquals(t.state, "completed");
    assertEquals(Deno.readTextFileSync(`${dir}/keep.txt`).slice(0, 2), "bx");
    assertEquals(Deno.readTextFileSync(`${dir}/big.txt`).slice(0, 2), "by");
    assertEquals(exists(`${dir}/gone.txt`), false);
    assertEquals(Deno.readTextFileSync(`${dir}/made.txt`), "made\n");

    const url = `/api/agents/${h.agent}/sessions/${conv}/rewind`;
    const plan = await h.api("POST", url, { turn_id: t.id });
    assertEquals(
      plan.body.files.map((f: { path: string; action: string; status: string }) =>
        `${f.path}:${f.action}:${f.status}`
      ),
      [
        "big.txt:restore:too_large",
        "gone.txt:restore:revert",
        "keep.txt:restore:revert",
        "made.txt:delete:revert",
      ],
    );
    const done = await h.api("POST", url, { turn_id: t.id, confirm: true });
    assertEquals(done.status, 201);
    assertEquals(
      done.body.files.map((f: { path: string; reverted: boolean }) => `${f.path}:${f.reverted}`),
      ["big.txt:false", "gone.txt:true", "keep.txt:true", "made.txt:true"],
    );
    assertEquals(Deno.readTextFileSync(`${dir}/keep.txt`) === atLimit, true);
    assertEquals(Deno.readTextFileSync(`${dir}/gone.txt`), "bye\n");
    assertEquals(exists(`${dir}/made.txt`), false);
    assertEquals(Deno.readTextFileSync(`${dir}/big.txt`).slice(0, 2), "by");
    // The mode of a replaced file is kept.
    assertEquals(Deno.statSync(`${dir}/keep.txt`).mode! & 0o777, 0o644);
  } finally {
    await h.close();
  }
});
