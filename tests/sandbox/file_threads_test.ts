/**
 * [PF-2] The read file tools run on the file-tool thread pool: the server's event loop keeps
 * running while a tool runs, answers equal the loop's own, a dead or lying thread gives
 * `tool_thread_failed` and the next call works, and close() leaves no thread.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { FileThreadPool } from "../../runtime/tools/file_threads.ts";
import { READ_WHOLE_TEXT, readWholeText, runReadTool } from "../../runtime/tools/read_tools.ts";
import { executeReadTool, executeReadToolOffLoop } from "../../runtime/runs/tool_exec.ts";
import { BUILTIN_TOOL_SPECS, type ToolSpec } from "../../runtime/tools/catalog.ts";
import type { ToolArgs } from "../../runtime/tools/policy.ts";

/** Args carrying the stand-in thread's gate (a SharedArrayBuffer is not a tool argument). */
const gated = (gate: SharedArrayBuffer): ToolArgs =>
  ({ pattern: "needle", gate }) as unknown as ToolArgs;

const builtinToolSpec = (id: string): ToolSpec => BUILTIN_TOOL_SPECS.find((s) => s.id === id)!;

/** A real private workspace directory for an async test (removed after it). */
async function withWorkspace(
  fn: (ws: { dir: string; file(rel: string, data: string): string }) => Promise<void>,
): Promise<void> {
  const dir = Deno.makeTempDirSync({ prefix: "ab-ft-" });
  Deno.chmodSync(dir, 0o700);
  const ws = {
    dir,
    file(rel: string, data: string) {
      const p = `${dir}/${rel}`;
      Deno.mkdirSync(p.slice(0, p.lastIndexOf("/")), { recursive: true, mode: 0o700 });
      Deno.writeTextFileSync(p, data, { mode: 0o600 });
      Deno.chmodSync(p, 0o600);
      return p;
    },
  };
  try {
    await fn(ws);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

const GATED = new URL("./gated_file_thread.ts", import.meta.url);
const OUT = 64 * 1024;

function tree(ws: { file(rel: string, data: string): string }) {
  for (let i = 0; i < 40; i++) {
    ws.file(`src/d${i % 4}/f${i}.ts`, `const a${i} = ${i};\nneedle ${i}\n`);
  }
  ws.file("notes.md", "line one\nneedle here\n");
}

Deno.test("the read tools answer on a thread exactly what they answer on the loop", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileThreadPool({ size: 2 });
    try {
      const calls: [string, ToolArgs][] = [
        ["file/grep", { pattern: "needle" }],
        ["file/grep", { pattern: "nee.le [0-9]", regex: true, path: "src" }],
        ["file/grep", { pattern: "absent" }],
        ["file/glob", { pattern: "**/*.ts" }],
        ["file/read_text", { path: "notes.md" }],
        ["file/read_text", { path: "missing.md" }],
        ["file/stat", { path: "src" }],
        ["file/grep", { pattern: "../x" }],
      ];
      const onThreads = await Promise.all(calls.map(([t, a]) => pool.run(t, ws.dir, a, OUT)));
      for (const [i, [t, a]] of calls.entries()) {
        assertEquals(onThreads[i], runReadTool(t, ws.dir, a, OUT), `${t} ${JSON.stringify(a)}`);
      }
      assertEquals(pool.stats, { onThread: calls.length, onLoop: 0, failed: 0 });
      assert(pool.threads <= 2, "never more threads than the bound");
      // The output bound is applied on the thread too.
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, 10), {
        ok: false,
        code: "search_limit",
      });
    } finally {
      pool.close();
    }
  });
});

Deno.test("an ACP runner's whole-file read answers on a thread what the loop's reader answers", async () => {
  await withWorkspace(async (ws) => {
    // Several 4 KiB windows, read as one text with the first window's receipt.
    ws.file("big.txt", Array.from({ length: 600 }, (_, i) => `line ${i} of the file`).join("\n"));
    const pool = new FileThreadPool({ size: 1 });
    try {
      const want = readWholeText(ws.dir, "big.txt");
      assert(want.ok && want.text.length > 3 * 4096);
      const got = await pool.run(
        READ_WHOLE_TEXT,
        ws.dir,
        { path: "big.txt" },
        Number.MAX_SAFE_INTEGER,
      );
      assertEquals(got, want);
      assertEquals(
        await pool.run(READ_WHOLE_TEXT, ws.dir, { path: "none.txt" }, Number.MAX_SAFE_INTEGER),
        readWholeText(ws.dir, "none.txt"),
      );
      assertEquals(pool.stats.onThread, 2);
    } finally {
      pool.close();
    }
  });
});

Deno.test("the server's callers go through the pool and keep the executor's refusals", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileThreadPool({ size: 1 });
    try {
      const grep = builtinToolSpec("file/grep");
      const args = { pattern: "needle" };
      assertEquals(
        await executeReadToolOffLoop(grep, ws.dir, args, pool),
        executeReadTool(grep, ws.dir, args),
      );
      assertEquals(pool.stats.onThread, 1);
      assertEquals(
        await executeReadToolOffLoop(builtinToolSpec("file/write"), ws.dir, {}, pool),
        { ok: false, code: "tool_denied" },
      );
      assertEquals(pool.stats.onThread, 1, "a refused tool never reaches a thread");
    } finally {
      pool.close();
    }
  });
});

Deno.test("the event loop runs while a tool runs on a thread", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileThreadPool({ size: 1, url: GATED });
    try {
      const gate = new SharedArrayBuffer(4);
      let ticks = 0;
      // The thread blocks until a timer on THIS loop opens the gate: were the tool on the loop,
      // the timer could never fire and the call never end.
      const running = pool.run("file/grep", ws.dir, gated(gate), OUT);
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          ticks++;
          Atomics.store(new Int32Array(gate), 0, 1);
          Atomics.notify(new Int32Array(gate), 0);
          resolve();
        }, 0)
      );
      const r = await running;
      assertEquals(ticks, 1);
      assertEquals(r, runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT));
      assertEquals(pool.stats.onThread, 1);
    } finally {
      pool.close();
    }
  });
});

Deno.test("a crashed or lying thread answers tool_thread_failed and the next call works", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileThreadPool({ size: 1, url: GATED });
    try {
      const grep = () => pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT);
      const want = runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT);
      assertEquals(await grep(), want);
      // A job queued behind the crash is not lost: it runs on the replacement thread.
      const [crashed, queued] = await Promise.all([
        pool.run("test/crash", ws.dir, {}, OUT),
        grep(),
      ]);
      assertEquals(crashed, { ok: false, code: "tool_thread_failed" });
      assertEquals(queued, want);
      assertEquals(await pool.run("test/garbage", ws.dir, {}, OUT), {
        ok: false,
        code: "tool_thread_failed",
      });
      assertEquals(await grep(), want);
      assertEquals(pool.stats, { onThread: 3, onLoop: 0, failed: 2 });
    } finally {
      pool.close();
    }
  });
});

Deno.test("close() ends every thread and answers what was still running", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileThreadPool({ size: 2, url: GATED });
    const gate = new SharedArrayBuffer(4);
    const stuck = pool.run("file/grep", ws.dir, gated(gate), OUT);
    const waiting = [1, 2].map(() => pool.run("file/grep", ws.dir, gated(gate), OUT));
    assertEquals(pool.threads, 2);
    pool.close();
    assertEquals(pool.threads, 0);
    for (const r of await Promise.all([stuck, ...waiting])) {
      assertEquals(r, { ok: false, code: "tool_thread_failed" });
    }
    // The pool starts again on the next call.
    const again = await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT);
    assertEquals(again, runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT));
    pool.close();
    assertEquals(pool.threads, 0);
  });
});

Deno.test("a thread module that cannot load (a single-file bundle) runs the tools on the loop", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileThreadPool({
      size: 2,
      url: new URL("./no_such_thread.ts", import.meta.url),
    });
    try {
      const want = runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT);
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT), want);
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT), want);
      assertEquals(pool.threads, 0);
      assertEquals(pool.stats, { onThread: 0, onLoop: 2, failed: 0 });
    } finally {
      pool.close();
    }
  });
});
