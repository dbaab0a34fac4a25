/**
 * [PF-2] Agents' work runs below the Control Plane's CPU priority: every thread of a confined
 * Worker, the command a runner runs and every thread of a file-tool process run
 * SANDBOX_NICE_INCREMENT nice steps below the server (this test process), which keeps its own —
 * set by the server at spawn and again by the child, to the same value.
 */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { SANDBOX_NICE_INCREMENT } from "../../runtime/limits.ts";
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { runCommand } from "../../runtime/exec/runner.ts";
import { spawnFileToolProcess } from "../../runtime/tools/file_tool_pool.ts";
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";
import {
  autogroupNiceOf,
  autogroupOf,
  groupReferenceNice,
  lowerAutogroupOf,
  lowerChild,
  lowered,
  NICE_PROGRAM,
  niceOf,
  niceProgramTrusted,
  spawnBelow,
  startedBelow,
} from "../../sandbox/priority.ts";

const SERVER_NICE = niceOf(Deno.pid)!;
const SANDBOXED = lowered(SERVER_NICE, SANDBOX_NICE_INCREMENT);
/**
 * This machine groups tasks by session (autogroups): a sandbox that calls setsid is its own
 * group, which must sit as far below the server's group as its threads do — below the server's
 * own nice where the server is in no group (the root task group: CI starts the suite so). (Where
 * the kernel has no autogroups there is no group to check.)
 */
const SERVER_GROUP = autogroupOf("self");
const SERVER_GROUP_NICE = autogroupNiceOf("self");
const SERVER_GROUP_REFERENCE = groupReferenceNice(SERVER_GROUP, SERVER_NICE);
const SANDBOXED_GROUP = SERVER_GROUP_REFERENCE === null
  ? null
  : lowered(SERVER_GROUP_REFERENCE, SANDBOX_NICE_INCREMENT);
import { anyFrame, makeSandboxDirs, recordingLogger } from "./helpers.ts";

/** The nice value of every thread of `pid`. */
function threadNices(pid: number): number[] {
  return listNumericEntries(`/proc/${pid}/task`).map((tid) => niceOf(pid, tid)!);
}

Deno.test("every thread of a confined Worker runs below the server's priority, which keeps its own", async () => {
  assert(SANDBOX_NICE_INCREMENT > 0 && (SANDBOXED > SERVER_NICE || SERVER_NICE === 19));
  const sb = makeSandboxDirs();
  try {
    const w = await spawnConfinedWorker({
      runRoot: sb.runRoot,
      deadlineMs: 30_000,
      log: recordingLogger(),
      parseFrame: anyFrame,
    });
    try {
      const nices = threadNices(w.pid);
      assert(nices.length >= 2, `threads ${nices.length}`);
      assertEquals(nices, nices.map(() => SANDBOXED));
      assertEquals(niceOf(Deno.pid), SERVER_NICE, "the server's priority is unchanged");
      // Its own session, so its own autogroup: that group is lowered too.
      const group = readProcText(`/proc/${w.pid}/autogroup`);
      if (SANDBOXED_GROUP !== null) {
        assert(group !== readProcText("/proc/self/autogroup"), "the Worker has its own group");
        assertEquals(autogroupNiceOf(w.pid), SANDBOXED_GROUP);
      }
      assertEquals(autogroupNiceOf("self"), SERVER_GROUP_NICE, "the server's group is unchanged");
    } finally {
      await w.kill("killed");
    }
  } finally {
    sb.cleanup();
  }
});

Deno.test("a runner's command runs below the server's priority", async () => {
  const base = Deno.makeTempDirSync({ prefix: "ab-nice-" });
  Deno.chmodSync(base, 0o700);
  Deno.mkdirSync(`${base}/scratch`);
  Deno.mkdirSync(`${base}/tmp`);
  try {
    const r = await runCommand({
      // Field 19 of the command's own /proc stat line (its comm, "sh", has no space), then
      // its session's autogroup line ("/autogroup-N nice K").
      argv: [
        "sh",
        "-c",
        "read -r line < /proc/self/stat; set -- $line; echo ${19}; cat /proc/self/autogroup || true",
      ],
      cwd: "",
      scratchDir: `${base}/scratch`,
      tmpDir: `${base}/tmp`,
      timeoutS: 60,
      runKey: "nice",
    });
    assertEquals([r.outcome, r.exit_code], ["exited", 0]);
    const [nice, group] = r.stdout.text.split("\n");
    assertEquals(nice, String(SANDBOXED));
    if (SANDBOXED_GROUP !== null) {
      // The runner started its own session (so its own group): set by the server before release.
      assert(
        group !== readProcText("/proc/self/autogroup")?.trim(),
        "the runner has its own group",
      );
      assertEquals(/ nice (-?\d+)$/.exec(group)?.[1], String(SANDBOXED_GROUP), group);
    }
  } finally {
    Deno.removeSync(base, { recursive: true });
  }
});

Deno.test("every thread of a file-tool process runs below the server's priority", async () => {
  const child = spawnFileToolProcess();
  const reader = child.stdout.getReader();
  try {
    // The process lowers its threads before it says it is ready.
    const { value } = await reader.read();
    assertEquals(new TextDecoder().decode(value), '{"ready":true}\n');
    const nices = threadNices(child.pid);
    assert(nices.length >= 2, `threads ${nices.length}`);
    assertEquals(nices, nices.map(() => SANDBOXED));
  } finally {
    reader.releaseLock();
    await child.stdin.close();
    await child.stdout.cancel();
    await child.status;
  }
});

Deno.test("the server lowers the autogroup of a child that started its own session", async () => {
  if (SANDBOXED_GROUP === null) return; // no autogroups on this kernel: nothing to lower
  const child = new Deno.Command("setsid", { args: ["sleep", "30"], stdin: "null" }).spawn();
  try {
    // setsid(1) execs sleep in its new session once it runs: wait for that state.
    for (let i = 0; i < 2000 && readProcText(`/proc/${child.pid}/comm`)?.trim() !== "sleep"; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    assert(readProcText(`/proc/${child.pid}/autogroup`) !== readProcText("/proc/self/autogroup"));
    assertEquals(autogroupNiceOf(child.pid), 0);
    assert(lowerAutogroupOf(child.pid, SANDBOX_NICE_INCREMENT));
    assertEquals(autogroupNiceOf(child.pid), SANDBOXED_GROUP);
    // Applied twice, the value is the same.
    assert(lowerAutogroupOf(child.pid, SANDBOX_NICE_INCREMENT));
    assertEquals(autogroupNiceOf(child.pid), SANDBOXED_GROUP);
    assertEquals(autogroupNiceOf("self"), SERVER_GROUP_NICE);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("the server lowers a child it spawned at once, before the child's own step", async () => {
  const child = new Deno.Command("sleep", { args: ["30"], stdin: "null" }).spawn();
  try {
    lowerChild(child.pid, SANDBOX_NICE_INCREMENT);
    assertEquals(niceOf(child.pid), SANDBOXED);
    // Applied twice, the value is the same: both sides compute it from the server's nice.
    lowerChild(child.pid, SANDBOX_NICE_INCREMENT);
    assertEquals(niceOf(child.pid), SANDBOXED);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("a child spawned through spawnBelow runs below the server from its first instruction", async () => {
  // Debian's coreutils nice: root-owned in root-owned directories.
  assert(niceProgramTrusted(), `${NICE_PROGRAM} is not trusted here`);
  // The shell reports its own nice before it could lower itself, then its pid and its parent's.
  const report = {
    executable: "/bin/sh",
    args: ["-c", 'cut -d" " -f19 /proc/$$/stat; echo $$ $PPID'],
  };
  const read = async (child: Deno.ChildProcess) => {
    const out = await child.output();
    assert(out.success);
    const [nice, ids] = new TextDecoder().decode(out.stdout).trim().split("\n");
    return { nice: Number(nice), ids, expected: `${child.pid} ${Deno.pid}` };
  };
  assertEquals(startedBelow(report, SANDBOX_NICE_INCREMENT).executable, NICE_PROGRAM);
  for (let i = 0; i < 5; i++) {
    const below = await read(spawnBelow(report, { stdout: "piped" }, SANDBOX_NICE_INCREMENT));
    // Exactly one increment: nice adds to whatever the process has when it runs, so a
    // lowerChild that came first as well would have made this 19.
    assertEquals(below.nice, SANDBOXED);
    // nice execve's the program in place: the pid Deno.Command gave, this process its parent.
    assertEquals(below.ids, below.expected);
  }
  // Spawned directly, the same program starts at the server's own priority.
  const direct = new Deno.Command(report.executable, { args: report.args, stdout: "piped" });
  assertEquals((await read(direct.spawn())).nice, SERVER_NICE);
  // A program that does not exist is left as it is: its spawn fails as it always did.
  const missing = { executable: `/nonexistent-${crypto.randomUUID()}`, args: ["x"] };
  assertEquals(startedBelow(missing, SANDBOX_NICE_INCREMENT), missing);
  const err = assertThrows(() => spawnBelow(missing, {}, SANDBOX_NICE_INCREMENT));
  assert(err instanceof Deno.errors.NotFound, String(err));
});

Deno.test("where this process may not run nice, spawnBelow spawns the program and lowers it at once", async () => {
  // A process whose --allow-run names /bin/sh alone (a narrower deployment than the launcher's).
  const script = `
    import { spawnBelow } from ${
    JSON.stringify(new URL("../../sandbox/priority.ts", import.meta.url).href)
  };
    const child = spawnBelow(
      { executable: "/bin/sh", args: ["-c", "read x; cut -d' ' -f19 /proc/$$/stat"] },
      { stdin: "piped", stdout: "piped" },
      ${SANDBOX_NICE_INCREMENT},
    );
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode("go\\n"));
    await w.close();
    const out = await child.output();
    console.log(new TextDecoder().decode(out.stdout).trim());
  `;
  const file = Deno.makeTempFileSync({ suffix: ".ts" });
  Deno.writeTextFileSync(file, script);
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "--allow-run=/bin/sh", "--allow-read", "--allow-ffi", file],
      stderr: "inherit",
    }).output();
    assert(out.success);
    // The shell waited for its input before it read its nice: lowered right after the spawn.
    assertEquals(Number(new TextDecoder().decode(out.stdout).trim()), SANDBOXED);
  } finally {
    Deno.removeSync(file);
  }
});
