/**
 * The internal `worker` sub-command [SB-1, SB-2, PK-3]: the only way a Worker
 * process ever runs. Stage 1 (`worker --run-root … --parent …`) confines and
 * execve's the same executable into stage 2 (`worker --stage2 …`), which
 * finishes confinement, sends the attestation frame and only then loads the
 * Worker body and hands it the IPC port.
 *
 * What this file enforces: there is no argument that skips a step — both
 * stages always run the full sequence of `confine.ts`; stage 2 refuses to
 * start unless it is already under no_new_privs (i.e. came through stage 1);
 * a failing step writes a `sandbox.failure` frame (step name + errno, no
 * text) and exits non-zero before anything untrusted is read. Stage 2 gets a
 * minimal explicit environment and, when not compiled, narrow Deno flags.
 */
import { parseArgs, UsageError } from "../runtime/argv.ts";
import type { FrameEnvelopeSchema, SandboxFailureFrame } from "../runtime/protocol/ipc.ts";
import { IPC_PROTOCOL_VERSION } from "../runtime/protocol/ipc_version.ts";
import { type ConfineSteps, PRODUCTION_STEPS, runStage1, runStage2 } from "./confine.ts";
import { readCapSets, type TargetIdentity } from "./capabilities.ts";
import { resolveSandboxIdentity, sandboxUser } from "./identity.ts";
import { AppError } from "../runtime/errors.ts";
import { landlockAbi } from "./probe.ts";
import { statx, syscall } from "./libc.ts";
import type { z } from "zod";

/** The Worker's view of its IPC channel (stdin/stdout), handed to the body after attestation. */
export interface WorkerPort {
  /** Sends one frame as one bounded NDJSON line. */
  send(frame: object): Promise<void>;
  /**
   * The next frame from the Control Plane, validated by `parse` when given;
   * null at end of input; rejects with `worker_protocol_error` on any violation.
   */
  receive<T = z.infer<typeof FrameEnvelopeSchema>>(
    timeoutMs: number,
    parse?: (value: unknown) => { ok: true; frame: T } | { ok: false },
  ): Promise<T | null>;
  /**
   * Before the first `receive`: true when the Control Plane has already
   * written to the Worker's input (a Run is waiting for it: the cold path), so
   * the body can skip work that only pays off while a Worker waits in the pool
   * [PF-1]. A hint: it reads nothing and decides nothing about safety.
   */
  frameWaiting(): boolean;
}

/** What runs inside the confined Worker; resolves to the process exit code. */
export type WorkerBody = (port: WorkerPort) => Promise<number>;

/**
 * The body, or how stage 2 loads it: stage 1 only confines, so the body (the
 * kernel, zod and the frame schemas) is loaded by stage 2 alone [PF-1].
 */
export type WorkerBodySource = WorkerBody | { load: () => Promise<WorkerBody> };

/** Where stage 2 comes from when not compiled: a module and the args that select worker mode. */
export interface Stage2Entry {
  /** file: URL of the module stage 2 runs (main.ts in production). */
  module: URL;
  /** Arguments before the worker flags (["worker"] for main.ts). */
  argsPrefix: readonly string[];
  /**
   * Extra Deno flags for stage 2. Production grants no permission here (the
   * bundled Worker passes only `--no-code-cache`); the escape probes grant
   * Deno-level permissions so their attempts reach the kernel and prove the
   * OS confinement, not Deno's permission layer, denies.
   * @default []
   */
  denoFlags?: readonly string[];
}

export interface WorkerCommandOptions {
  body: WorkerBodySource;
  /** @default main.ts with ["worker"] */
  stage2?: Stage2Entry;
  /** Confinement mechanisms. @default PRODUCTION_STEPS (tests inject failures) */
  steps?: ConfineSteps;
}

/** Exit code for a confinement failure (EX_SOFTWARE). */
export const EXIT_SANDBOX_FAILURE = 70;

const REPO_ROOT = new URL("../", import.meta.url);
/** Source-tree entries a non-compiled Worker needs (never the home, .git or tests). */
const CODE_ENTRIES = [
  "main.ts",
  "deno.json",
  "package.json",
  "runtime",
  "sandbox",
  "migrations",
  "dist",
  "ui",
  "node_modules",
];
/** Minimal system libraries for the dynamic loader and libc FFI. */
export const SYSTEM_ROOTS = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"];

/** Deno flags for both stages when not compiled: FFI for the confinement syscalls only. */
export function denoRunFlags(): string[] {
  return [
    "run",
    "--quiet",
    "--no-prompt",
    "--no-remote",
    "--config",
    new URL("deno.json", REPO_ROOT).pathname,
    // SECURITY: FFI is how the Worker calls prctl/seccomp/landlock on itself; the
    // OS confinement, not Deno's permission layer, is the boundary.
    "--allow-ffi",
  ];
}

/** The production stage-2 entry: main.ts in `worker` mode. */
export function mainStage2Entry(): Stage2Entry {
  return { module: new URL("main.ts", REPO_ROOT), argsPrefix: ["worker"] };
}

/** `agent-builder worker …` (internal). Returns the exit code. */
export async function workerCommand(argv: string[], opts: WorkerCommandOptions): Promise<number> {
  const a = parseArgs(argv, {
    flags: ["run-root", "parent", "deno-dir", "uid", "gid"],
    switches: ["stage2"],
  });
  const runRoot = a.flags["run-root"];
  const parent = Number(a.flags["parent"]);
  if (!runRoot?.startsWith("/") || !Number.isInteger(parent) || parent < 1) {
    throw new UsageError("worker needs --run-root ABS and --parent PID");
  }
  const steps = opts.steps ?? PRODUCTION_STEPS;
  if (!a.switches.has("stage2")) {
    const entry = opts.stage2 ?? mainStage2Entry();
    const identity = identityFlags(a.flags["uid"], a.flags["gid"]);
    const inputs = stage1Inputs(runRoot, parent, a.flags["deno-dir"] ?? null, entry, identity);
    const r = runStage1(inputs, steps);
    return reportFailure(r.ok ? "execve_returned" : r.step, r.ok ? 0 : r.errno);
  }
  // Stage 2 must have come through stage 1: no_new_privs is inherited across execve.
  const nnp = syscall("prctl", 39, 0, 0, 0, 0);
  if (nnp.ret !== 1n) return reportFailure("not_from_stage1", 0);
  const r = runStage2(steps);
  if (!r.ok) return reportFailure(r.step, r.errno);
  sendAttestation();
  // The body's code (the kernel, zod, the frame schemas) and the IPC framing are
  // loaded only now, fully confined — seccomp included — and after the attestation
  // [PF-1]: a pooled Worker loads them while it waits, a cold one while the Control
  // Plane verifies it and prepares the Run. It is code from the code roots; nothing
  // untrusted has been read, and no frame is read before the body asks for one.
  // The body first: it configures zod before the framing's schemas are built.
  const body = typeof opts.body === "function" ? opts.body : await opts.body.load();
  const ipc = await import("../runtime/protocol/ipc.ts");
  return await runBody(ipc, body);
}

/** `--uid N --gid N` (both or neither) from the trusted command line. */
function identityFlags(uid: string | undefined, gid: string | undefined): TargetIdentity | null {
  if (uid === undefined && gid === undefined) return null;
  const u = Number(uid);
  const g = Number(gid);
  if (!/^[0-9]{1,10}$/.test(uid ?? "") || !/^[0-9]{1,10}$/.test(gid ?? "") || u < 1 || g < 1) {
    throw new UsageError("--uid and --gid must both be unprivileged numeric ids");
  }
  return { uid: u, gid: g };
}

/**
 * The identity arguments a root server appends to every sandbox command line
 * (`--uid`/`--gid` of `serve --runner-user`, default `nobody`); none when the server is
 * unprivileged. A root server whose sandbox account cannot be resolved gets
 * `sandbox_unavailable`: it never runs a sandbox as root [SB-7].
 */
export function sandboxIdentityArgs(user: string = sandboxUser()): string[] {
  if (Number(syscall("getuid").ret) !== 0) return [];
  const id = resolveSandboxIdentity(user);
  if (id === null) throw new AppError("sandbox_unavailable", `sandbox user ${user} unresolved`);
  return ["--uid", String(id.uid), "--gid", String(id.gid)];
}

/**
 * Not compiled: the source-tree entries, the stage-2 module's directory and
 * this repository's transpiled modules in the Deno cache, for Landlock
 * read+execute rules (shared with the runner). Only existing paths.
 */
export function devCodeRoots(module: URL, denoDir: string | null): string[] {
  const repo = REPO_ROOT.pathname.replace(/\/$/, "");
  const roots = CODE_ENTRIES.map((e) => `${repo}/${e}`);
  const moduleDir = new URL("./", module).pathname.replace(/\/$/, "");
  if (!roots.some((r) => moduleDir === r || moduleDir.startsWith(`${r}/`))) {
    if (moduleDir !== repo) roots.push(moduleDir);
  }
  if (denoDir !== null && denoDir.startsWith("/")) roots.push(`${denoDir}/gen/file${repo}`);
  return roots.filter((p) => statx(-100, p, 0).ok);
}

function stage1Inputs(
  runRoot: string,
  parent: number,
  denoDir: string | null,
  entry: Stage2Entry,
  identity: TargetIdentity | null,
) {
  const executable = Deno.execPath();
  const compiled = Deno.build.standalone === true;
  const tail = ["--stage2", "--run-root", runRoot, "--parent", String(parent)];
  const codeRoots: string[] = [];
  let stage2Argv: string[];
  const stage2Env: Record<string, string> = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  if (compiled) {
    stage2Argv = [executable, "worker", ...tail];
  } else {
    const repo = REPO_ROOT.pathname.replace(/\/$/, "");
    for (const e of CODE_ENTRIES) codeRoots.push(`${repo}/${e}`);
    const moduleDir = new URL("./", entry.module).pathname.replace(/\/$/, "");
    if (!codeRoots.some((r) => moduleDir === r || moduleDir.startsWith(`${r}/`))) {
      if (moduleDir !== repo) codeRoots.push(moduleDir);
    }
    if (denoDir !== null && denoDir.startsWith("/")) {
      stage2Env.DENO_DIR = denoDir;
      // Only this repository's transpiled modules (the cache mirrors source
      // paths under gen/file/), not the operator's cache of other projects.
      // Stage 1 loads the same graph, so it has just written these entries.
      codeRoots.push(`${denoDir}/gen/file${repo}`);
    }
    stage2Argv = [
      executable,
      ...denoRunFlags(),
      ...(entry.denoFlags ?? []),
      entry.module.pathname,
      ...entry.argsPrefix,
      ...tail,
    ];
  }
  return {
    executable,
    expectedParent: parent,
    runRoot,
    systemRoots: SYSTEM_ROOTS,
    codeRoots: codeRoots.filter((p) => statx(-100, p, 0).ok),
    stage2Argv,
    stage2Env,
    identity,
  };
}

function reportFailure(step: string, errno: number): number {
  const frame: SandboxFailureFrame = {
    v: IPC_PROTOCOL_VERSION,
    type: "sandbox.failure",
    step: step.slice(0, 32),
    errno,
  };
  Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(frame) + "\n"));
  return EXIT_SANDBOX_FAILURE;
}

/**
 * The attestation frame, written synchronously: the frame needs neither the
 * IPC framing nor Deno's streams, which load after it [PF-1]. Called only
 * after `runStage2` succeeded.
 */
function sendAttestation(): void {
  const caps = readCapSets();
  const frame = {
    v: IPC_PROTOCOL_VERSION,
    type: "sandbox.attestation",
    pid: Number(syscall("getpid").ret),
    ppid: Number(syscall("getppid").ret),
    landlock_abi: landlockAbi().abi ?? 0,
    seccomp_mode: 2,
    no_new_privs: true,
    capabilities_zero: caps !== null && (caps.effective | caps.permitted | caps.inheritable) === 0n,
  };
  const line = new TextEncoder().encode(JSON.stringify(frame) + "\n");
  for (let off = 0; off < line.length;) off += Deno.stdout.writeSync(line.subarray(off));
}

const POLLIN = 0x1;
const POLLHUP = 0x10;

/**
 * True when stdin has a byte or its end waiting now (ppoll with a zero
 * timeout on fd 0). A hint only: it consumes nothing.
 */
function stdinReady(): boolean {
  const pfd = new Uint8Array(8); // struct pollfd { int fd; short events; short revents; }
  const v = new DataView(pfd.buffer);
  v.setInt32(0, 0, true);
  v.setInt16(4, POLLIN, true);
  const zero = new Uint8Array(16); // struct timespec { 0, 0 }: do not wait
  const r = syscall("ppoll", pfd, 1, zero, null, 0);
  return r.ret > 0n && (v.getInt16(6, true) & (POLLIN | POLLHUP)) !== 0;
}

async function runBody(
  ipc: typeof import("../runtime/protocol/ipc.ts"),
  body: WorkerBody,
): Promise<number> {
  // [PF-1] Frames go out with one write(2) each on this thread and come in through direct
  // reads: the web streams over stdin/stdout handed every frame to a blocking-pool thread
  // and back, and compiled their machinery on a Run's first frame (docs/performance.md).
  const writer = new ipc.NdjsonWriter(Deno.stdout);
  const reader = new ipc.NdjsonReader(Deno.stdin);
  const port: WorkerPort = {
    send: (frame) => writer.send(frame),
    receive: (timeoutMs, parse) => reader.next(timeoutMs, parse),
    frameWaiting: () => reader.lines === 0 && stdinReady(),
  };
  const code = await body(port);
  await writer.close();
  return code;
}
