/**
 * Runner escape suite [EX-1, EX-2, SB-7]: real commands run through
 * `runCommand()` — the production runner, confined by its real sequence —
 * attempt each escape; every test asserts the exact errno or outcome, and
 * that no process of the command survives. The server side (this test
 * process) runs as root, the case where RLIMIT_NPROC would not bind.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { runCommand } from "../../runtime/exec/runner.ts";
import type { OutputDelta } from "../../runtime/exec/runner_types.ts";
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";
import { listenAbstract } from "./helpers.ts";
import {
  COMMAND_MEMORY_CGROUP_BYTES,
  COMMAND_RLIMIT_FSIZE_BYTES,
  COMMAND_RLIMIT_NPROC,
  RUNNER_LIVE_OUTPUT_MAX_BYTES,
  RUNNER_STREAM_HALF_BYTES,
} from "../../runtime/limits.ts";

const EPERM = 1;
const ENOENT = 2;
const ESRCH = 3;
const EAGAIN = 11;
const ENOMEM = 12;
const EACCES = 13;
const NOBODY = "65534";
const PROBE = new URL("./runner_probe.ts", import.meta.url).pathname;

interface Dirs {
  base: string;
  scratch: string;
  tmp: string;
  cleanup(): void;
}

/**
 * Scratch and tmp below a 0700 root-owned base (the real layout: a home the
 * sandbox uid cannot search), the probe copied in.
 */
function makeDirs(): Dirs {
  const base = Deno.makeTempDirSync({ prefix: "ab-runner-" });
  Deno.chmodSync(base, 0o700);
  const scratch = `${base}/scratch`;
  const tmp = `${base}/tmp`;
  Deno.mkdirSync(scratch);
  Deno.mkdirSync(tmp);
  Deno.copyFileSync(PROBE, `${scratch}/probe.ts`);
  return { base, scratch, tmp, cleanup: () => Deno.removeSync(base, { recursive: true }) };
}

/** Host pids whose command line contains `token`. */
function processesWith(token: string): number[] {
  return listNumericEntries("/proc").filter((pid) =>
    (readProcText(`/proc/${pid}/cmdline`) ?? "").includes(token)
  );
}

const uniqueSleep = () => `${100000 + Math.floor(Math.random() * 800000)}.${Date.now() % 1000}`;

function run(d: Dirs, argv: string[], timeoutS = 60, onOutput?: (x: OutputDelta) => void) {
  return runCommand({
    argv,
    cwd: "",
    scratchDir: d.scratch,
    tmpDir: d.tmp,
    timeoutS,
    runKey: crypto.randomUUID(),
    onOutput,
  });
}

Deno.test("a command in the runner fails every escape attempt with the exact errno", async () => {
  const d = makeDirs();
  // A home the way serve lays it out, but world-readable, so every EACCES
  // below comes from the runner's Landlock ruleset, not from file modes.
  const home = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "ab-home-" });
  Deno.chmodSync(home, 0o755);
  Deno.mkdirSync(`${home}/.runtime/secrets`, { recursive: true, mode: 0o755 });
  Deno.mkdirSync(`${home}/data`, { mode: 0o755 });
  Deno.writeTextFileSync(`${home}/.runtime/secrets/bootstrap_token`, "secret-token");
  Deno.chmodSync(`${home}/.runtime/secrets/bootstrap_token`, 0o644);
  Deno.writeTextFileSync(`${home}/data/registry.sqlite`, "db");
  Deno.chmodSync(`${home}/data/registry.sqlite`, 0o644);
  const outside = `${home}/outside`;
  Deno.mkdirSync(outside);
  Deno.chmodSync(outside, 0o777);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  const acceptLoop = (async () => {
    for await (const c of listener) {
      accepted++;
      c.close();
    }
  })();
  // A server unix socket lives in a 0700 directory of its runtime dir.
  Deno.mkdirSync(`${home}/.runtime/sock`, { mode: 0o700 });
  const unix = Deno.listen({ transport: "unix", path: `${home}/.runtime/sock/gateway.sock` });
  const abstract = listenAbstract();
  try {
    const args = {
      tcp_port: (listener.addr as Deno.NetAddr).port,
      server_pid: Deno.pid,
      home,
      outside_dir: outside,
      unix_socket: `${home}/.runtime/sock/gateway.sock`,
      abstract_name: abstract.name,
    };
    const r = await run(d, ["deno", "run", "-A", "probe.ts", "escapes", JSON.stringify(args)]);
    assertEquals([r.outcome, r.exit_code, r.stderr.text], ["exited", 0, ""]);
    assertEquals(r.pid_namespace, true);
    const got = JSON.parse(r.stdout.text);
    assertEquals(got, {
      read_etc_hostname_or_passwd: 0, // read-only /etc is part of the profile
      read_bootstrap_token: EACCES,
      read_data_dir_file: EACCES,
      write_outside_scratch: EACCES,
      write_usr_bin: EACCES,
      write_scratch: 0,
      tcp_connect_server: EPERM, // seccomp: only AF_UNIX sockets
      deno_tcp_connect_server: EPERM,
      udp_socket: EPERM,
      unix_connect_server_socket: EACCES, // the server's 0700 runtime dir
      abstract_connect_server: EPERM, // Landlock abstract-socket scope
      signal_server: ESRCH, // not even visible from the runner's PID namespace
      ptrace_attach_runner: EPERM,
      process_vm_readv_runner: EPERM,
      raise_rlimit_nofile: EPERM,
      capset_all: EPERM,
      setuid_root: EPERM,
      ambient_raise_sys_admin: EPERM,
      mount_tmpfs: EPERM,
      unshare_user: EPERM,
      clone_newpid: EPERM,
      bpf: EPERM,
      perf_event_open: EPERM,
      keyctl: EPERM,
      io_uring_setup: EPERM,
      userfaultfd: EPERM,
      init_module: EPERM,
      reboot: EPERM,
      setpriority_user: EPERM,
      mmap_shared_anonymous_3gib: EPERM, // not counted by RLIMIT_DATA: refused
      mmap_private_anonymous_5gib: ENOMEM, // RLIMIT_DATA 4 GiB
      memfd_create: EPERM,
      open_dev_zero: EACCES,
      proc_server_visible: ENOENT, // hidepid=invisible: the host's processes are not listed
      proc_init_visible: ENOENT,
      proc_only_own_processes: 0,
      status_Uid: `${NOBODY}\t${NOBODY}\t${NOBODY}\t${NOBODY}`,
      status_Gid: `${NOBODY}\t${NOBODY}\t${NOBODY}\t${NOBODY}`,
      status_Groups: "",
      status_CapEff: "0000000000000000",
      status_CapPrm: "0000000000000000",
      status_CapInh: "0000000000000000",
      status_CapBnd: "0000000000000000",
      status_CapAmb: "0000000000000000",
      status_NoNewPrivs: "1",
      status_Seccomp: "2",
    });
    assertEquals(accepted, 0);
    // Nothing was planted outside the scratch.
    assertEquals([...Deno.readDirSync(outside)].length, 0);
    assertEquals(Deno.statSync(`${d.scratch}/written-in-scratch.txt`).isFile, true);
  } finally {
    listener.close();
    unix.close();
    abstract.close();
    await acceptLoop.catch(() => {});
    Deno.removeSync(home, { recursive: true });
    d.cleanup();
  }
});

Deno.test("a fork bomb in the runner hits RLIMIT_NPROC (EAGAIN) and none of its processes survive", async () => {
  const d = makeDirs();
  const token = uniqueSleep();
  try {
    const r = await run(d, ["deno", "run", "-A", "probe.ts", "forkbomb", token]);
    assertEquals([r.outcome, r.exit_code], ["exited", 0]);
    const bomb = JSON.parse(r.stdout.text);
    assertEquals(bomb.errno, EAGAIN);
    // RLIMIT_NPROC is COMMAND_RLIMIT_NPROC above the tasks the sandbox uid
    // already had at spawn (other sandboxes share the uid): the bomb stopped
    // below it, far from the unbounded count a root runner would reach.
    assert(bomb.nproc >= COMMAND_RLIMIT_NPROC, `nproc ${bomb.nproc}`);
    assert(bomb.spawned > 0 && bomb.spawned < bomb.nproc, `spawned ${bomb.spawned}`);
    assertEquals(processesWith(token), []);
  } finally {
    d.cleanup();
  }
});

Deno.test("writing past RLIMIT_FSIZE (64 MiB + 1 byte) kills the command with SIGXFSZ", async () => {
  const d = makeDirs();
  try {
    const limit = COMMAND_RLIMIT_FSIZE_BYTES;
    const r = await run(d, ["deno", "run", "-A", "probe.ts", "fsize", String(limit)]);
    assertEquals([r.outcome, r.signal, r.exit_code], ["signaled", "SIGXFSZ", null]);
    assertEquals(r.stdout.text, `{"wrote":${limit}}\n`);
    assertEquals(Deno.statSync(`${d.scratch}/big.bin`).size, limit);
  } finally {
    d.cleanup();
  }
});

Deno.test("a command that sleeps forever ends at its wall timeout with nothing left", async () => {
  const d = makeDirs();
  const token = uniqueSleep();
  try {
    const r = await run(d, ["sleep", token], 1);
    assertEquals([r.outcome, r.exit_code], ["timeout", null]);
    assert(r.duration_ms >= 1000, `duration ${r.duration_ms}`);
    assertEquals(processesWith(token), []);
  } finally {
    d.cleanup();
  }
});

Deno.test("a double-forked, setsid'd daemon does not survive its command (no surviving grandchild)", async () => {
  const d = makeDirs();
  const token = uniqueSleep();
  try {
    // The daemon: sh forks a subshell, which forks `setsid -f sleep` (a new
    // session whose parent exits at once), then everything returns.
    const r = await run(d, [
      "sh",
      "-c",
      `(setsid -f sleep ${token} > /dev/null 2>&1 &) ; echo started`,
    ]);
    assertEquals([r.outcome, r.exit_code, r.stdout.text], ["exited", 0, "started\n"]);
    assertEquals(processesWith(token), []);
  } finally {
    d.cleanup();
  }
});

Deno.test("a stdout flood is bounded: first and last 32 KiB kept, live output ≤ 256 KiB", async () => {
  const d = makeDirs();
  try {
    let live = 0;
    const r = await run(
      d,
      ["yes", "flood"],
      2,
      (x) => live += new TextEncoder().encode(x.text).length,
    );
    assertEquals(r.outcome, "timeout");
    assertEquals(r.stdout.truncated, true);
    assert(r.stdout.total_bytes > 2 * RUNNER_STREAM_HALF_BYTES, `total ${r.stdout.total_bytes}`);
    const [head, tail] = r.stdout.text.split(/\n\[… \d+ bytes omitted …\]\n/);
    assertEquals(new TextEncoder().encode(head).length, RUNNER_STREAM_HALF_BYTES);
    assertEquals(new TextEncoder().encode(tail).length, RUNNER_STREAM_HALF_BYTES);
    assert(live > 0 && live <= RUNNER_LIVE_OUTPUT_MAX_BYTES, `live ${live}`);
  } finally {
    d.cleanup();
  }
});

Deno.test("output is cleaned: ANSI escapes stripped, invalid UTF-8 replaced", async () => {
  const d = makeDirs();
  try {
    const r = await run(d, ["printf", "\\033[31mred\\033[0m \\377 ok\\n"]);
    assertEquals([r.outcome, r.exit_code, r.stdout.text], ["exited", 0, "red \uFFFD ok\n"]);
  } finally {
    d.cleanup();
  }
});

Deno.test("an unknown program, NUL in argv, a cwd outside the scratch are refused before anything runs", async () => {
  const d = makeDirs();
  try {
    const codeOf = async (p: Promise<unknown>) => {
      try {
        await p;
        return "ran";
      } catch (e) {
        return (e as { code?: string }).code ?? String(e);
      }
    };
    assertEquals(await codeOf(run(d, ["no-such-program-xyz"])), "exec_unknown_program");
    assertEquals(await codeOf(run(d, ["/bin/sh"])), "exec_unknown_program");
    assertEquals(await codeOf(run(d, ["echo", "a\0b"])), "tool_invalid_arguments");
    assertEquals(await codeOf(run(d, Array(65).fill("true"))), "tool_invalid_arguments");
    assertEquals(
      await codeOf(runCommand({
        argv: ["true"],
        cwd: "../..",
        scratchDir: d.scratch,
        tmpDir: d.tmp,
        timeoutS: 5,
        runKey: "k",
      })),
      "tool_invalid_arguments",
    );
    assertEquals(await codeOf(run(d, ["true"], 121)), "tool_invalid_arguments");
    void ENOENT;
  } finally {
    d.cleanup();
  }
});

Deno.test("a command's processes together are bounded by its 4 GiB memory cgroup: two 2.25 GiB hogs, one is OOM-killed", async () => {
  const d = makeDirs();
  try {
    let cgroup = "";
    let limit = "";
    const r = await run(
      d,
      [
        "sh",
        "-c",
        `grep memory /proc/self/cgroup; exec ${Deno.execPath()} run -A probe.ts twohogs 2304`,
      ],
      120,
      (x) => {
        const m = /:memory:(\S+)/.exec(x.text);
        if (m && cgroup === "") {
          cgroup = m[1];
          limit = Deno.readTextFileSync(`/sys/fs/cgroup/memory${cgroup}/memory.limit_in_bytes`)
            .trim();
        }
      },
    );
    assertEquals([r.outcome, r.exit_code], ["exited", 0]);
    assert(/\/agent-builder-runner-\d+$/.test(cgroup), cgroup);
    assertEquals(limit, String(COMMAND_MEMORY_CGROUP_BYTES));
    const hogs = JSON.parse(r.stdout.text.split("\n").filter((l) => l.startsWith("["))[0]);
    // RLIMIT_DATA (4 GiB) lets each hog allocate; the cgroup does not let both.
    assert(
      hogs.some((h: { signal: string | null }) => h.signal === "SIGKILL"),
      JSON.stringify(hogs),
    );
    // The runner's cgroup is removed with it.
    assertEquals(cgroupExists(cgroup), false);
  } finally {
    d.cleanup();
  }
});

function cgroupExists(path: string): boolean {
  try {
    return Deno.statSync(`/sys/fs/cgroup/memory${path}`).isDirectory;
  } catch {
    return false;
  }
}

Deno.test("a real toolchain runs in the runner: `deno test` of a small project reports its failing test", async () => {
  const d = makeDirs();
  try {
    Deno.writeTextFileSync(
      `${d.scratch}/math_test.ts`,
      [
        'import { add } from "./math.ts";',
        'Deno.test("adds", () => { if (add(1, 2) !== 3) throw new Error("add is wrong"); });',
        'Deno.test("passes", () => {});',
        "",
      ].join("\n"),
    );
    Deno.writeTextFileSync(
      `${d.scratch}/math.ts`,
      "export const add = (a: number, b: number) => a - b;\n",
    );
    const r = await run(d, ["deno", "test", "--no-check", "math_test.ts"]);
    assertEquals([r.outcome, r.exit_code], ["exited", 1]);
    const out = r.stdout.text + r.stderr.text;
    assert(out.includes("add is wrong"), out);
    assert(/1 passed \| 1 failed/.test(out), out);
  } finally {
    d.cleanup();
  }
});
