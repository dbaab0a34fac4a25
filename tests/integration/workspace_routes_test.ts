/**
 * [#18] The operator's workspace routes: a read-only browser (listing with
 * size and modified time, bounded at WORKSPACE_BROWSE_ENTRIES_MAX; one file
 * as text or raw download) that opens paths descriptor-anchored like the file
 * tools (no escape, no symlinks), and the instruction file edit through
 * file/write's planner and committer (dry run = the exact diff; a stale base
 * is `file_changed`; the write path's 8 KiB content bound at and past it).
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { startRunHarness } from "../helpers/runs.ts";
import { WORKSPACE_BROWSE_ENTRIES_MAX, WRITE_CONTENT_MAX_BYTES } from "../../runtime/limits.ts";

Deno.test("the workspace browser lists, reads and downloads files and refuses escapes and links", async () => {
  const h = await startRunHarness();
  try {
    const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
    Deno.mkdirSync(`${ws}/notes`, { mode: 0o700 });
    Deno.writeTextFileSync(`${ws}/notes/a.md`, "# A\n\nhello\n", { mode: 0o600 });
    Deno.writeFileSync(`${ws}/blob.bin`, new Uint8Array([0xff, 0x00, 0xfe]), { mode: 0o600 });
    Deno.symlinkSync("/etc/passwd", `${ws}/link`);
    const base = `/api/agents/${h.agent}/workspace`;

    const root = await h.api("GET", `${base}/list`);
    assertEquals(root.status, 200);
    const byName = Object.fromEntries(root.body.entries.map((e: any) => [e.name, e]));
    assertEquals(root.body.entries[0].name, "notes", "directories first");
    assertEquals(byName["agent-builder.md"].kind, "file");
    assert(byName["agent-builder.md"].size > 0 && byName["agent-builder.md"].modified_ms > 0);
    assertEquals(byName["link"].kind, "other", "a symlink is not followed");
    assertEquals(root.body.truncated, false);

    const sub = await h.api("GET", `${base}/list?path=notes`);
    assertEquals(sub.body.entries.map((e: any) => [e.name, e.size]), [["a.md", 11]]);
    const file = await h.api("GET", `${base}/file?path=notes/a.md`);
    assertEquals([file.body.text, file.body.size, file.body.binary], ["# A\n\nhello\n", 11, false]);
    assertEquals((await h.api("GET", `${base}/file?path=blob.bin`)).body.binary, true);
    const dl = await fetch(`${h.server.url}${base}/file?path=blob.bin&download=1`, {
      headers: h.session.headers(),
    });
    assertEquals(dl.headers.get("content-disposition"), "attachment; filename*=UTF-8''blob.bin");
    assertEquals([...new Uint8Array(await dl.arrayBuffer())], [0xff, 0x00, 0xfe]);

    for (const p of ["../state.sqlite", "/etc/passwd", "link", "notes/../../x"]) {
      const r = await h.api("GET", `${base}/file?path=${encodeURIComponent(p)}`);
      assert(r.status >= 400 && r.status < 500 && codeOf(r) !== null, `${p}: ${r.status}`);
    }
    const bad = await h.api("GET", `${base}/list?path=..`);
    assert(bad.status >= 400 && bad.status < 500, "no listing above the root");
    assertEquals(codeOf(await h.api("GET", `${base}/list?nope=1`)), "schema_violation");
  } finally {
    await h.close();
  }
});

Deno.test("a listing shows at most WORKSPACE_BROWSE_ENTRIES_MAX entries and says when it was cut", async () => {
  const h = await startRunHarness();
  try {
    const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
    Deno.mkdirSync(`${ws}/many`, { mode: 0o700 });
    for (let i = 0; i < WORKSPACE_BROWSE_ENTRIES_MAX; i++) {
      Deno.writeTextFileSync(`${ws}/many/f${i}.txt`, "x", { mode: 0o600 });
    }
    const at = await h.api("GET", `/api/agents/${h.agent}/workspace/list?path=many`);
    assertEquals([at.body.entries.length, at.body.truncated], [
      WORKSPACE_BROWSE_ENTRIES_MAX,
      false,
    ]);
    Deno.writeTextFileSync(`${ws}/many/one-more.txt`, "x", { mode: 0o600 });
    const past = await h.api("GET", `/api/agents/${h.agent}/workspace/list?path=many`);
    assertEquals(past.body.truncated, true);
    assert(past.body.entries.length <= WORKSPACE_BROWSE_ENTRIES_MAX);
  } finally {
    await h.close();
  }
});

Deno.test("the instruction file is edited through the write path: dry-run diff, commit, stale base, 8 KiB bound", async () => {
  const h = await startRunHarness();
  try {
    const path = `/api/agents/${h.agent}/instructions`;
    const file = `${h.server.home}/data/agents/${h.agent}/workspace/agent-builder.md`;
    const cur = await h.api("GET", path);
    assertEquals([cur.status, cur.body.present], [200, true]);
    assertEquals(cur.body.text, Deno.readTextFileSync(file));

    const text = "# Be brief\n\nAnswer in one sentence.\n";
    const dry = await h.api("POST", path, { text, base_digest: cur.body.digest, dry_run: true });
    assertEquals([dry.status, dry.body.committed], [200, false]);
    assert(dry.body.diff.includes("+Answer in one sentence."), dry.body.diff);
    assertEquals(Deno.readTextFileSync(file), cur.body.text, "a dry run writes nothing");

    const done = await h.api("POST", path, { text, base_digest: cur.body.digest });
    assertEquals([done.status, done.body.committed], [200, true]);
    assertEquals(Deno.readTextFileSync(file), text);
    assertEquals(Deno.statSync(file).mode! & 0o777, 0o600);

    // The base the operator edited is gone: refused, nothing written.
    const stale = await h.api("POST", path, { text: "other", base_digest: cur.body.digest });
    assertEquals([stale.status, codeOf(stale)], [409, "file_changed"]);
    assertEquals(Deno.readTextFileSync(file), text);

    const now = (await h.api("GET", path)).body.digest;
    const atLimit = "a".repeat(WRITE_CONTENT_MAX_BYTES - 1) + "\n";
    const ok = await h.api("POST", path, { text: atLimit, base_digest: now });
    assertEquals(ok.status, 200, "exactly at the write path's bound");
    const next = (await h.api("GET", path)).body.digest;
    const past = await h.api("POST", path, { text: atLimit + "b", base_digest: next });
    assertEquals([past.status, codeOf(past)], [413, "content_too_large"]);
  } finally {
    await h.close();
  }
});
