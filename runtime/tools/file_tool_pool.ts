/**
 * The file-tool pool [PF-2]: the read tools (stat, read_text, glob, grep) run
 * in at most FILE_TOOL_PROCESSES child processes (`agent-builder file-tools`,
 * file_tool_process.ts); the server's event loop only writes the job and
 * awaits its one answer. Starting a process does not block the loop (a Web
 * Worker thread's creation did, for 26–100 ms), and its memory is not the
 * server's.
 *
 * What this file enforces: a process runs one job at a time, jobs start in
 * arrival order; an answer is schema-checked, bounded (FILE_TOOL_ANSWER_MAX_BYTES)
 * and must carry the id of the process's job; a process that dies, errs or
 * breaks the protocol during a job answers that job `file_tool_failed`
 * (nothing else is lost: the process is killed and the queue goes on with a
 * new one); `close()` kills every process and answers what was still waiting
 * `file_tool_failed`; an idle process ends after FILE_TOOL_IDLE_MS. Where the
 * process cannot start at all (it ends before it says it is ready, e.g. a raw
 * single-file bundle has no entry to re-run), the pool runs the same tools on
 * the loop instead — the same results, only not off the loop; a job whose
 * process cannot be spawned at that moment (EAGAIN) runs on the loop too.
 */
import * as z from "zod";
import { isErrorCode } from "../errors.ts";
import {
  FILE_TOOL_ANSWER_MAX_BYTES,
  FILE_TOOL_IDLE_MS,
  FILE_TOOL_PROCESSES,
  SANDBOX_NICE_INCREMENT,
} from "../limits.ts";
import { spawnBelow } from "../../sandbox/priority.ts";
import type { ToolArgs } from "./policy.ts";
import { type ReadToolResult, runReadTool } from "./read_tools.ts";
import { type FileToolJob, readLines } from "./file_tool_process.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";

const Identity = z.object({
  dev: z.string(),
  ino: z.string(),
  size: z.number(),
  mtime_ns: z.string(),
  ctime_ns: z.string(),
}).strict();

const Receipt = z.object({
  kind: z.literal("file/read_text"),
  path: z.string(),
  identity: Identity,
  content_digest: z.string(),
  range: z.object({ start: z.number(), end: z.number() }).strict(),
  truncated: z.enum(["none", "byte_limit", "line_limit"]),
}).strict();

const Answer = z.object({
  id: z.number(),
  result: z.union([
    z.object({ ok: z.literal(true), text: z.string(), receipt: Receipt.optional() }).strict(),
    z.object({ ok: z.literal(false), code: z.string().refine(isErrorCode) }).strict(),
  ]),
}).strict();

/** How a file-tool process is started. */
export interface FileToolCommand {
  executable: string;
  args: string[];
}

const REPO_ROOT = new URL("../../", import.meta.url);

/** This executable in `file-tools` mode (main.ts with the pinned Deno when not compiled). */
export function productionFileToolCommand(): FileToolCommand {
  if (Deno.build.standalone) return { executable: Deno.execPath(), args: ["file-tools"] };
  return {
    executable: Deno.execPath(),
    args: [
      // The Worker's run flags: the read tools call openat2/statx/getdents64 through FFI.
      ...denoRunFlags(),
      "--allow-read",
      // The workspace's owner check compares with the process's uid and gid.
      "--allow-sys=uid,gid",
      new URL("main.ts", REPO_ROOT).pathname,
      "file-tools",
    ],
  };
}

/**
 * Starts a file-tool process: stdin and stdout piped for the protocol, stderr dropped; below the
 * server's loop from its first instruction [PF-2] (the process sets it again).
 */
export function spawnFileToolProcess(
  cmd: FileToolCommand = productionFileToolCommand(),
): Deno.ChildProcess {
  return spawnBelow(
    cmd,
    { stdin: "piped", stdout: "piped", stderr: "null" },
    SANDBOX_NICE_INCREMENT,
  );
}

interface Waiting {
  job: FileToolJob;
  resolve(r: ReadToolResult): void;
}

interface Slot {
  child: Deno.ChildProcess;
  /** The process's stdin, held for its whole life. */
  writer: WritableStreamDefaultWriter<Uint8Array>;
  ready: boolean;
  job: Waiting | null;
  idle: ReturnType<typeof setTimeout> | undefined;
  /** Resolves once the process exited and its output was read to the end. */
  ended: Promise<void>;
}

export interface FileToolPoolOptions {
  /** Processes at most. @default FILE_TOOL_PROCESSES */
  size?: number;
  /** How a process is started. @default productionFileToolCommand() */
  command?: FileToolCommand;
  /** @default FILE_TOOL_IDLE_MS */
  idleMs?: number;
}

export class FileToolPool {
  readonly #size: number;
  readonly #command: FileToolCommand | undefined;
  readonly #idleMs: number;
  #slots: Slot[] = [];
  #ending = new Set<Promise<void>>();
  #queue: Waiting[] = [];
  #next = 1;
  #onLoop = false;
  readonly #enc = new TextEncoder();
  /** Jobs answered by a process, run on the loop (no process could start), failed with file_tool_failed. */
  readonly stats = { inProcess: 0, onLoop: 0, failed: 0 };

  constructor(o: FileToolPoolOptions = {}) {
    this.#size = o.size ?? FILE_TOOL_PROCESSES;
    this.#command = o.command;
    this.#idleMs = o.idleMs ?? FILE_TOOL_IDLE_MS;
  }

  /** Live processes now. */
  get processes(): number {
    return this.#slots.length;
  }

  /** Runs read tool `tool` with validated `args` in workspace `dir` in a file-tool process. */
  run(tool: string, dir: string, args: ToolArgs, outputMax: number): Promise<ReadToolResult> {
    if (this.#onLoop) {
      this.stats.onLoop++;
      return Promise.resolve(runReadTool(tool, dir, args, outputMax));
    }
    return new Promise((resolve) => {
      this.#queue.push({
        job: { id: this.#next++, tool, dir, args, output_max: outputMax },
        resolve,
      });
      this.#pump();
    });
  }

  /**
   * Kills every process; whatever was running or waiting answers `file_tool_failed` at once.
   * Resolves when every process has exited.
   */
  async close(): Promise<void> {
    for (const s of [...this.#slots]) this.#drop(s);
    for (const w of this.#queue.splice(0)) this.#fail(w);
    await Promise.all([...this.#ending]);
  }

  #pump() {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.job === null);
      if (!slot) {
        if (this.#slots.length >= this.#size) return;
        const spawned = this.#spawn();
        if (spawned === null) {
          // The process could not be started now (e.g. EAGAIN): this job runs on the loop.
          const w = this.#queue.shift()!;
          this.stats.onLoop++;
          w.resolve(runReadTool(w.job.tool, w.job.dir, w.job.args, w.job.output_max));
          continue;
        }
        slot = spawned;
      }
      const w = this.#queue.shift()!;
      clearTimeout(slot.idle);
      slot.idle = undefined;
      slot.job = w;
      this.#send(slot, w.job);
    }
  }

  #send(slot: Slot, job: FileToolJob) {
    slot.writer.write(this.#enc.encode(JSON.stringify(job) + "\n")).catch(() => this.#broken(slot));
  }

  #spawn(): Slot | null {
    const cmd = this.#command ?? productionFileToolCommand();
    let child: Deno.ChildProcess;
    try {
      child = spawnFileToolProcess(cmd);
    } catch {
      return null;
    }
    const slot: Slot = {
      child,
      writer: child.stdin.getWriter(),
      ready: false,
      job: null,
      idle: undefined,
      ended: Promise.resolve(),
    };
    slot.ended = (async () => {
      try {
        for await (const line of readLines(child.stdout, FILE_TOOL_ANSWER_MAX_BYTES)) {
          if (line === null) return this.#broken(slot);
          let data: unknown;
          try {
            data = JSON.parse(line);
          } catch {
            return this.#broken(slot);
          }
          this.#answer(slot, data);
          if (!this.#slots.includes(slot)) return;
        }
      } catch {
        // The process's output ended abnormally: treated like its end.
      } finally {
        await child.stdout.cancel().catch(() => {});
        await child.status;
        await slot.writer.abort().catch(() => {});
      }
      // Output ended: the process is gone.
      if (!slot.ready && this.#slots.includes(slot)) this.#unstartable();
      else this.#broken(slot);
    })();
    this.#ending.add(slot.ended);
    slot.ended.finally(() => this.#ending.delete(slot.ended));
    this.#slots.push(slot);
    return slot;
  }

  #answer(slot: Slot, data: unknown) {
    if (!slot.ready) {
      if ((data as { ready?: unknown } | null)?.ready === true) {
        slot.ready = true;
        return;
      }
      return this.#broken(slot);
    }
    const a = Answer.safeParse(data);
    const w = slot.job;
    if (!a.success || w === null || a.data.id !== w.job.id) return this.#broken(slot);
    slot.job = null;
    this.stats.inProcess++;
    w.resolve(a.data.result as ReadToolResult);
    this.#pump();
    if (slot.job === null && this.#slots.includes(slot)) {
      const idle = setTimeout(() => {
        if (slot.job === null) this.#drop(slot);
      }, this.#idleMs);
      Deno.unrefTimer(idle);
      slot.idle = idle;
    }
  }

  /** A process that died or broke the protocol: its job fails, the queue goes on. */
  #broken(slot: Slot) {
    if (!this.#slots.includes(slot)) return;
    this.#drop(slot);
    this.#pump();
  }

  /** No process could start: every job, now and later, runs on the loop. */
  #unstartable() {
    this.#onLoop = true;
    const jobs: Waiting[] = [];
    for (const s of [...this.#slots]) {
      if (s.job) jobs.push(s.job);
      s.job = null;
      this.#drop(s);
    }
    jobs.push(...this.#queue.splice(0));
    for (const w of jobs) {
      this.stats.onLoop++;
      w.resolve(runReadTool(w.job.tool, w.job.dir, w.job.args, w.job.output_max));
    }
  }

  #drop(slot: Slot) {
    const i = this.#slots.indexOf(slot);
    if (i < 0) return;
    this.#slots.splice(i, 1);
    clearTimeout(slot.idle);
    try {
      slot.child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    if (slot.job) this.#fail(slot.job);
    slot.job = null;
  }

  #fail(w: Waiting) {
    this.stats.failed++;
    w.resolve({ ok: false, code: "file_tool_failed" });
  }
}

/** The Control Plane's one pool; the app closes it on shutdown. */
export const fileToolPool: FileToolPool = new FileToolPool();
