/**
 * exec/run in the runner [TL-7, EX-1]: bounded-bash runs its builtin in a
 * confined runner; runtime-compile checks a workspace file and its relative
 * imports with the bundled TypeScript compiler, diagnostics as
 * `path:line:col TSxxxx message`; refusals carry fixed codes.
 */
import { assertEquals } from "../helpers/assert.ts";
import { runBoundedBash, runRuntimeCompile } from "../../runtime/exec/exec_run.ts";
import { AppError } from "../../runtime/errors.ts";
import { COMPILE_FILES_MAX } from "../../runtime/limits.ts";
import { RUNNER_SCRATCH_MOUNT } from "../../sandbox/runner_entry.ts";

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
    return "ran";
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
};

Deno.test("bounded-bash runs printf, pwd, true and false in the runner", async () => {
  const run = (command: string) => runBoundedBash({ command, runKey: crypto.randomUUID() });
  const p = await run("printf 'hello %s\\n' world");
  assertEquals([p.outcome, p.exit_code, p.output], ["exited", 0, "hello world\n"]);
  const w = await run("pwd");
  assertEquals([w.exit_code, w.output], [0, `${RUNNER_SCRATCH_MOUNT}\n`]);
  assertEquals((await run("true")).exit_code, 0);
  assertEquals((await run("false")).exit_code, 1);
  assertEquals(await codeOf(run("printf a | cat")), "bash_syntax_refused");
  assertEquals(await codeOf(run("cat /etc/passwd")), "bash_not_builtin");
});

function workspace(files: Record<string, string>): string {
  const dir = Deno.makeTempDirSync({ prefix: "ab-ws-compile-" });
  Deno.chmodSync(dir, 0o700);
  for (const [rel, text] of Object.entries(files)) {
    const full = `${dir}/${rel}`;
    Deno.mkdirSync(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    Deno.writeTextFileSync(full, text);
  }
  return dir;
}

Deno.test("runtime-compile reports a type error in the file and in its relative imports with positions", async () => {
  const dir = workspace({
    "main.ts": [
      'import { add } from "./lib/math.ts";',
      'import { z } from "npm:zod";',
      "const n: number = add(1, 2);",
      "const s: string = n;",
      "console.log(Deno.args, s, z);",
      "",
    ].join("\n"),
    "lib/math.ts": 'export function add(a: number, b: number): number {\n  return a + b + "";\n}\n',
    "bad.js": "const = 1;\n",
    "notes.py": "print(1)\n",
  });
  try {
    const r = await runRuntimeCompile({ workspaceDir: dir, path: "main.ts", runKey: "c1" });
    assertEquals([r.outcome, r.exit_code], ["exited", 1]);
    assertEquals(
      r.output,
      "main.ts:4:7 TS2322 Type 'number' is not assignable to type 'string'.\n" +
        "lib/math.ts:2:3 TS2322 Type 'string' is not assignable to type 'number'.\n",
    );
    const js = await runRuntimeCompile({ workspaceDir: dir, path: "bad.js", runKey: "c3" });
    assertEquals(js.output.split("\n")[0], "bad.js:1:7 TS1134 Variable declaration expected.");
    assertEquals(
      await codeOf(runRuntimeCompile({ workspaceDir: dir, path: "notes.py", runKey: "c4" })),
      "compile_unsupported_file",
    );
    assertEquals(
      await codeOf(runRuntimeCompile({ workspaceDir: dir, path: "../x.ts", runKey: "c5" })),
      "path_invalid",
    );
    assertEquals(
      await codeOf(runRuntimeCompile({ workspaceDir: dir, path: "missing.ts", runKey: "c6" })),
      "path_not_found",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("runtime-compile takes a file with 63 relative imports (64 files) and refuses a 65th", async () => {
  // .mjs: the count is the collector's (the same for .ts); the runner then
  // checks syntax only, which keeps this bound test fast on a loaded host.
  const chain = (n: number) => {
    const files: Record<string, string> = {};
    for (let i = 0; i < n; i++) {
      files[`f${i}.mjs`] = i + 1 < n
        ? `import { v${i + 1} } from "./f${i + 1}.mjs";\nexport const v${i} = v${i + 1};\n`
        : `export const v${i} = 1;\n`;
    }
    return files;
  };
  const at = workspace(chain(COMPILE_FILES_MAX));
  const past = workspace(chain(COMPILE_FILES_MAX + 1));
  try {
    const r = await runRuntimeCompile({ workspaceDir: at, path: "f0.mjs", runKey: "c7" });
    assertEquals([r.exit_code, r.output], [0, ""]);
    assertEquals(
      await codeOf(runRuntimeCompile({ workspaceDir: past, path: "f0.mjs", runKey: "c8" })),
      "compile_too_many_files",
    );
  } finally {
    Deno.removeSync(at, { recursive: true });
    Deno.removeSync(past, { recursive: true });
  }
});
