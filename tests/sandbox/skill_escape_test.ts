/**
 * Skill scripts in the runner [LC-3, EX-1]: real scripts run through
 * `runSkillScript()` — the production runner profile, as root — and probe
 * from inside. Each escape is refused twice: by the Deno permission layer
 * (`NotCapable`) and, with that layer switched off ("all", the suite's own
 * switch), by the kernel confinement alone (the exact errno). A script that
 * loops is killed at the wall time with `skill_timeout`.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { runSkillScript, type SkillScript } from "../../runtime/skills/skill_run.ts";
import {
  SKILL_ANSWER_MAX_BYTES,
  SKILL_OUTPUT_FILES_LISTED_MAX,
  SKILL_STDERR_MAX_BYTES,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../../runtime/limits.ts";
import { exists } from "../helpers/home.ts";

function skill(script: string, name = "probe", entry = "main.ts"): SkillScript {
  return {
    name,
    entry,
    manifestText: JSON.stringify({ name, description: "d", entry, args: {} }),
    script: new TextEncoder().encode(script),
  };
}

async function call(
  script: string,
  args: Record<string, unknown> = {},
  p?: "skill" | "all",
  entry?: string,
) {
  const r = await runSkillScript({
    skill: skill(script, "probe", entry),
    args,
    runKey: crypto.randomUUID(),
    permissions: p,
  });
  if (!r.ok) return { code: r.code } as const;
  // deno-lint-ignore no-explicit-any
  return { code: null, result: JSON.parse(r.text) as any } as const;
}

// The probe: every attempt reports `ok`, or the error's class and errno code.
const PROBE = `
const input = JSON.parse(await new Response(Deno.stdin.readable).text());
const out = {};
const t = async (k, f) => {
  try { await f(); out[k] = "ok"; }
  catch (e) { out[k] = e.name + (e.code ? ":" + e.code : ""); }
};
await t("tcp_connect", () => Deno.connect({ hostname: "127.0.0.1", port: input.port }));
await t("tcp_listen", () => Deno.listen({ hostname: "127.0.0.1", port: 0 }).close());
await t("fetch", () => fetch("http://127.0.0.1:" + input.port + "/"));
await t("write_own_dir", () => Deno.writeTextFile(new URL("./planted.ts", import.meta.url), "x"));
await t("write_tmp", () => Deno.writeTextFile("/tmp/skill-escape.txt", "x"));
await t("write_var_tmp", () => Deno.writeTextFile("/var/tmp/skill-escape.txt", "x"));
await t("read_workspace", () => Deno.readTextFile(input.workspace_file));
await t("list_workspace", () => [...Deno.readDirSync(input.workspace)]);
await t("run", () => new Deno.Command("/bin/true").output());
const dir = Deno.env.get("SKILL_OUTPUT_DIR");
await t("write_output", () => Deno.writeTextFile(dir + "/result.txt", "hello"));
console.log(JSON.stringify(out));
`;

Deno.test("a skill script is refused the network, its own directory, the workspace and any other write — by Deno's permissions and by the kernel alone", async () => {
  // A real listener and a real workspace file the script is told about.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const accepted: Deno.Conn[] = [];
  const acceptLoop = (async () => {
    for await (const c of listener) accepted.push(c);
  })();
  const workspace = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "ab-ws-" });
  Deno.chmodSync(workspace, 0o755);
  Deno.writeTextFileSync(`${workspace}/secret.txt`, "secret");
  Deno.chmodSync(`${workspace}/secret.txt`, 0o644);
  const args = { port, workspace, workspace_file: `${workspace}/secret.txt` };
  try {
    const product = await call(PROBE, args);
    assertEquals(product.code, null);
    assertEquals(JSON.parse(product.result.answer), {
      tcp_connect: "NotCapable",
      tcp_listen: "NotCapable",
      fetch: "NotCapable",
      write_own_dir: "NotCapable",
      write_tmp: "NotCapable",
      write_var_tmp: "NotCapable",
      read_workspace: "NotCapable",
      list_workspace: "NotCapable",
      run: "NotCapable",
      write_output: "ok",
    });
    assertEquals(product.result.output_files, [{ path: "result.txt", size: 5 }]);
    assertEquals(product.result.output_files_total, 1);

    // The kernel layer on its own: Deno's permissions switched off.
    const kernel = await call(PROBE, args, "all");
    assertEquals(kernel.code, null);
    assertEquals(JSON.parse(kernel.result.answer), {
      tcp_connect: "PermissionDenied:EPERM", // seccomp: no AF_INET socket
      tcp_listen: "PermissionDenied:EPERM",
      fetch: "TypeError",
      write_own_dir: "Error:EROFS", // the skill's directory is a read-only mount
      write_tmp: "PermissionDenied:EACCES", // Landlock grants nothing there
      write_var_tmp: "PermissionDenied:EACCES",
      read_workspace: "PermissionDenied:EACCES",
      list_workspace: "PermissionDenied:EACCES",
      run: "ok", // a child process is confined the same way
      write_output: "ok",
    });
    assertEquals(accepted.length, 0, "nothing ever connected");
    assert(!exists("/tmp/skill-escape.txt") && !exists("/var/tmp/skill-escape.txt"));
  } finally {
    listener.close();
    await acceptLoop.catch(() => {});
    Deno.removeSync(workspace, { recursive: true });
  }
});

Deno.test("the arguments arrive as JSON on stdin and stdout is the answer, cut to its bound with a marker", async () => {
  const echo = await call(
    `const a = JSON.parse(await new Response(Deno.stdin.readable).text());
     console.log("got " + a.text + " x" + a.n);
     console.error("a warning");`,
    { text: "hé", n: 3 },
  );
  assertEquals(echo.code, null);
  assertEquals(echo.result.answer, "got hé x3\n");
  assertEquals(echo.result.exit_code, 0);
  assertEquals(echo.result.stderr, "a warning\n");
  assertEquals(echo.result.trust, "untrusted");

  const flood = await call(`console.log("z".repeat(100000)); Deno.exit(3);`);
  assertEquals(flood.code, null);
  assertEquals(flood.result.exit_code, 3);
  assertEquals(flood.result.answer_truncated, true);
  assertEquals(flood.result.answer_bytes, 100001);
  assert(flood.result.answer.startsWith("z".repeat(SKILL_ANSWER_MAX_BYTES)));
  assert(flood.result.answer.endsWith("[… answer cut: the skill printed more than fits …]"));
  // Escaping-heavy output still fits one projection.
  const quotes = await call(`console.log('"\\\\'.repeat(20000));`);
  assertEquals(quotes.result.answer_truncated, true);
  const bytes = new TextEncoder().encode(JSON.stringify(quotes.result)).length;
  assert(bytes <= TOOL_RESULT_PROJECTION_MAX_BYTES, String(bytes));
});

Deno.test("the answer is whole at exactly 3 KiB and cut one byte past; the output listing stops at 16 files with the count exact", async () => {
  const print = (n: number) =>
    `await Deno.stdout.write(new TextEncoder().encode("a".repeat(${n})));
     const d = Deno.env.get("SKILL_OUTPUT_DIR");
     for (let i = 0; i < 17; i++) await Deno.writeTextFile(d + "/f" + String(i).padStart(2, "0"), "x".repeat(i));
     await Deno.stderr.write(new TextEncoder().encode("e".repeat(600) + "END"));`;
  // A short answer leaves room for the whole file list and the stderr tail.
  const small = await call(print(100));
  assertEquals(small.result.output_files.length, SKILL_OUTPUT_FILES_LISTED_MAX);
  assertEquals(small.result.output_files_total, 17);
  assertEquals(small.result.stderr, "e".repeat(SKILL_STDERR_MAX_BYTES - 3) + "END");
  // A full answer has priority: whole at 3 KiB; the list and stderr give way, the count stays.
  const at = await call(print(SKILL_ANSWER_MAX_BYTES));
  assertEquals(at.result.answer, "a".repeat(SKILL_ANSWER_MAX_BYTES));
  assertEquals(at.result.answer_truncated, false);
  assert(
    new TextEncoder().encode(JSON.stringify(at.result)).length <= TOOL_RESULT_PROJECTION_MAX_BYTES,
  );
  assertEquals(at.result.output_files_total, 17);
  assertEquals(small.result.output_files[0], { path: "f00", size: 0 });
  assertEquals(small.result.output_files.at(-1), { path: "f15", size: 15 });
  const past = await call(print(SKILL_ANSWER_MAX_BYTES + 1));
  assertEquals(past.result.answer_truncated, true);
  assertEquals(past.result.answer_bytes, SKILL_ANSWER_MAX_BYTES + 1);
  assert(past.result.answer.startsWith("a".repeat(SKILL_ANSWER_MAX_BYTES) + "\n[… answer cut"));
});

Deno.test("a script that loops forever is killed at the wall time: skill_timeout, nothing left running", async () => {
  // A unique entry name: the script's own command line names it (other suites may run skills).
  const entry = `loop-${crypto.randomUUID()}.ts`;
  const r = await call(`for (;;) {}`, {}, undefined, entry);
  assertEquals(r.code, "skill_timeout");
  // No process of it survives (the runner proved release; check the host too).
  for (const pid of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(pid.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${pid.name}/cmdline`);
      assert(!cmd.includes(entry), `left: ${cmd}`);
    } catch { /* gone */ }
  }
});
