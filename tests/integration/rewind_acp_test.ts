/**
 * A file written by an external ACP runner [LC-6] is a committed workspace
 * mutation like file/write [TL-11]: it keeps a checkpoint, and a rewind of
 * that Turn restores the file byte for byte.
 */
import { assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, submit } from "../helpers/runs.ts";
import { agentDataRel } from "../../runtime/home.ts";
import { startAcpHarness } from "../helpers/acp.ts";

Deno.test("a rewind restores a file an ACP runner wrote", async () => {
  const h = await startAcpHarness();
  try {
    const ws = `${h.server.home}/${agentDataRel(h.agent)}/workspace`;
    const bound = await h.api("PATCH", `/api/agents/${h.agent}`, { runner: "scripted" });
    assertEquals(bound.status, 200, JSON.stringify(bound.body));
    Deno.writeTextFileSync(`${ws}/notes.txt`, "first line\n");
    const conv = await newConversation(h);
    // The scripted agent's "readwrite" reads notes.txt and appends a line through fs/write.
    const r = await submit(h, conv, "readwrite");
    const asked = await readSse(h, r.body.run_id, {
      until: (f) => f.event === "permission.requested",
    });
    const p = asked.at(-1)!.data.payload;
    await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
      decision: "approve",
    });
    const frames = await readSse(h, r.body.run_id);
    assertEquals(frames.at(-1)!.event, "run.completed");
    assertEquals(Deno.readTextFileSync(`${ws}/notes.txt`), "first line\nedited by the runner\n");
    const d = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    const turnId = d.body.turns[0].id;
    const url = `/api/agents/${h.agent}/sessions/${conv}/rewind`;
    const plan = await h.api("POST", url, { turn_id: turnId });
    assertEquals(
      plan.body.files.map((f: { path: string; status: string }) => `${f.path}:${f.status}`),
      ["notes.txt:revert"],
    );
    const done = await h.api("POST", url, { turn_id: turnId, confirm: true });
    assertEquals(done.status, 201);
    assertEquals(Deno.readTextFileSync(`${ws}/notes.txt`), "first line\n");
  } finally {
    await h.close();
  }
});
