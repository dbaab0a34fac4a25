/**
 * [PF-2] The read file tools run in the file-tool processes (`agent-builder file-tools`): the
 * server's event loop keeps running while a tool runs, answers equal the loop's own, a dead,
 * lying or flooding process gives `file_tool_failed` and the next call works, and close() leaves
 * no process.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  type FileToolCommand,
  FileToolPool,
  spawnFileToolProcess,
} from "../../runtime/tools/file_tool_pool.ts";
import { READ_WHOLE_TEXT, readWholeText, runReadTool } from "../../runtime/tools/read_tools.ts";
import { executeReadTool, executeReadToolOffLoop } from "../../runtime/runs/tool_exec.ts";
import { BUILTIN_TOOL_SPECS, type ToolSpec } from "../../runtime/tools/catalog.ts";
import type { ToolArgs } from "../../runtime/tools/policy.ts";
import { FILE_TOOL_JOB_MAX_BYTES } from "../../runtime/limits.ts";

/** Args carrying the stand-in process's gate: the path of a FIFO it opens before it answers. */
const gated = (gate: string): ToolArgs => ({ pattern: "needle", gate }) as unknown as ToolArgs;

/** A FIFO whose opening for reading blocks the stand-in until the test opens it for writing. */
function makeGate(): { path: string; open(): Promise<void>; remove(): void } {
  const dir = Deno.makeTempDirSync({ prefix: "ab-gate-" });
  const path = `${dir}/gate`;
  const made = new Deno.Command("mkfifo", { args: ["-m", "600", path] }).outputSync();
  assert(made.success, "mkfifo");
  let writer: Deno.FsFile | null = null;
  return {
    path,
    async open() {
      writer = await Deno.open(path, { write: true });
      // Every blocked reader has the FIFO open now; closing lets the next one block again.
      writer.close();
    },
    remove: () => Deno.removeSync(dir, { recursive: true }),
  };
}

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

const STAND_IN: FileToolCommand = {
  executable: Deno.execPath(),
  args: [
    "run",
    "--quiet",
    "--allow-read",
    "--allow-ffi",
    "--allow-sys=uid,gid",
    new URL("./stand_in_file_tools.ts", import.meta.url).pathname,
  ],
};
const OUT = 64 * 1024;

function tree(ws: { file(rel: string, data: string): string }) {
  for (let i = 0; i < 40; i++) {
    ws.file(`src/d${i % 4}/f${i}.ts`, `const a${i} = ${i};\nneedle ${i}\n`);
  }
  ws.file("notes.md", "line one\nneedle here\n");
}

Deno.test("the read tools answer in a file-tool process exactly what they answer on the loop", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({ size: 2 });
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
      const inProcesss = await Promise.all(calls.map(([t, a]) => pool.run(t, ws.dir, a, OUT)));
      for (const [i, [t, a]] of calls.entries()) {
        assertEquals(inProcesss[i], runReadTool(t, ws.dir, a, OUT), `${t} ${JSON.stringify(a)}`);
      }
      assertEquals(pool.stats, { inProcess: calls.length, onLoop: 0, failed: 0 });
      assert(pool.processes <= 2, "never more processes than the bound");
      // The output bound is applied in the process too.
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, 10), {
        ok: false,
        code: "search_limit",
      });
    } finally {
      await pool.close();
    }
  });
});

Deno.test("an ACP runner's whole-file read answers in a file-tool process what the loop's reader answers", async () => {
  await withWorkspace(async (ws) => {
    // Several 4 KiB windows, read as one text with the first window's receipt.
    ws.file("big.txt", Array.from({ length: 600 }, (_, i) => `line ${i} of the file`).join("\n"));
    const pool = new FileToolPool({ size: 1 });
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
      assertEquals(pool.stats.inProcess, 2);
    } finally {
      await pool.close();
    }
  });
});

Deno.test("the server's callers go through the pool and keep the executor's refusals", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({ size: 1 });
    try {
      const grep = builtinToolSpec("file/grep");
      const args = { pattern: "needle" };
      assertEquals(
        await executeReadToolOffLoop(grep, ws.dir, args, pool),
        executeReadTool(grep, ws.dir, args),
      );
      assertEquals(pool.stats.inProcess, 1);
      assertEquals(
        await executeReadToolOffLoop(builtinToolSpec("file/write"), ws.dir, {}, pool),
        { ok: false, code: "tool_denied" },
      );
      assertEquals(pool.stats.inProcess, 1, "a refused tool never reaches a process");
    } finally {
      await pool.close();
    }
  });
});

Deno.test("the event loop runs while a tool runs in a file-tool process", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({ size: 1, command: STAND_IN });
    const gate = makeGate();
    try {
      let ticks = 0;
      // The process blocks until a timer on THIS loop opens the gate: were the tool on the loop,
      // the timer could never fire and the call never end.
      const running = pool.run("file/grep", ws.dir, gated(gate.path), OUT);
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          ticks++;
          gate.open().then(resolve);
        }, 0)
      );
      const r = await running;
      assertEquals(ticks, 1);
      assertEquals(r, runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT));
      assertEquals(pool.stats.inProcess, 1);
    } finally {
      await pool.close();
      gate.remove();
    }
  });
});

Deno.test("a crashed, lying or flooding process answers file_tool_failed and the next call works", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({ size: 1, command: STAND_IN });
    try {
      const grep = () => pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT);
      const want = runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT);
      assertEquals(await grep(), want);
      // A job queued behind the crash is not lost: it runs in the replacement process.
      const [crashed, queued] = await Promise.all([
        pool.run("test/crash", ws.dir, {}, OUT),
        grep(),
      ]);
      assertEquals(crashed, { ok: false, code: "file_tool_failed" });
      assertEquals(queued, want);
      assertEquals(await pool.run("test/garbage", ws.dir, {}, OUT), {
        ok: false,
        code: "file_tool_failed",
      });
      // An answer line over FILE_TOOL_ANSWER_MAX_BYTES is not read to its end.
      assertEquals(await pool.run("test/flood", ws.dir, {}, OUT), {
        ok: false,
        code: "file_tool_failed",
      });
      assertEquals(await grep(), want);
      assertEquals(pool.stats, { inProcess: 3, onLoop: 0, failed: 3 });
      assertEquals(pool.processes, 1);
    } finally {
      await pool.close();
    }
  });
});

Deno.test("close() kills every process and answers what was still running", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({ size: 2, command: STAND_IN });
    const gate = makeGate();
    try {
      const stuck = pool.run("file/grep", ws.dir, gated(gate.path), OUT);
      const waiting = [1, 2].map(() => pool.run("file/grep", ws.dir, gated(gate.path), OUT));
      assertEquals(pool.processes, 2);
      const closed = pool.close();
      assertEquals(pool.processes, 0);
      for (const r of await Promise.all([stuck, ...waiting])) {
        assertEquals(r, { ok: false, code: "file_tool_failed" });
      }
      await closed;
      // The pool starts again on the next call.
      const again = await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT);
      assertEquals(again, runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT));
      await pool.close();
      assertEquals(pool.processes, 0);
    } finally {
      gate.remove();
    }
  });
});

Deno.test("a process that ends before it is ready (a single-file bundle) makes the pool run the tools on the loop", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({
      size: 2,
      command: {
        executable: Deno.execPath(),
        args: ["run", new URL("./no_such_entry.ts", import.meta.url).pathname],
      },
    });
    try {
      const want = runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT);
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT), want);
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT), want);
      assertEquals(pool.processes, 0);
      assertEquals(pool.stats, { inProcess: 0, onLoop: 2, failed: 0 });
    } finally {
      await pool.close();
    }
  });
});

Deno.test("a job whose process cannot be spawned runs on the loop, and the next job tries again", async () => {
  await withWorkspace(async (ws) => {
    tree(ws);
    const pool = new FileToolPool({
      size: 1,
      command: { executable: `${ws.dir}/no-such-executable`, args: [] },
    });
    try {
      const want = runReadTool("file/grep", ws.dir, { pattern: "needle" }, OUT);
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT), want);
      assertEquals(await pool.run("file/grep", ws.dir, { pattern: "needle" }, OUT), want);
      assertEquals(pool.stats, { inProcess: 0, onLoop: 2, failed: 0 });
    } finally {
      await pool.close();
    }
  });
});

Deno.test("the real file-tool process refuses a job line over FILE_TOOL_JOB_MAX_BYTES and a line that is not a job", async () => {
  for (
    const line of [`{"id":1,"pad":"${"x".repeat(FILE_TOOL_JOB_MAX_BYTES)}"}`, `{"id":1}`, "nope"]
  ) {
    const child = spawnFileToolProcess();
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(line + "\n")).catch(() => {});
    await w.close().catch(() => {});
    const out = await child.output();
    assertEquals(out.code, 3, line.slice(0, 20));
    assertEquals(new TextDecoder().decode(out.stdout), '{"ready":true}\n');
  }
});
