/**
 * The file-tool thread pool [PF-2]: the read tools (stat, read_text, glob,
 * grep) run on at most FILE_THREADS Web Worker threads (file_thread.ts); the
 * server's event loop only posts the job and awaits its one answer.
 *
 * What this file enforces: a thread runs one job at a time, jobs start in
 * arrival order; an answer is schema-checked and must carry the id of the
 * thread's job; a thread that dies, errs or breaks the protocol during a job
 * answers that job `tool_thread_failed` (nothing else is lost: the thread is
 * dropped and the queue goes on with a new one); `close()` ends every thread
 * and answers what was still waiting `tool_thread_failed`; an idle thread
 * ends after FILE_THREAD_IDLE_MS. Where the thread's module cannot be loaded
 * at all (a raw single-file bundle has no file next to it), the pool runs the
 * same tools on the loop instead — the same results, only not off the loop.
 */
import * as z from "zod";
import { isErrorCode } from "../errors.ts";
import { FILE_THREAD_IDLE_MS, FILE_THREADS } from "../limits.ts";
import type { ToolArgs } from "./policy.ts";
import { type ReadToolResult, runReadTool } from "./read_tools.ts";
import type { FileThreadJob } from "./file_thread.ts";

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

interface Waiting {
  job: FileThreadJob;
  resolve(r: ReadToolResult): void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job: Waiting | null;
  idle: ReturnType<typeof setTimeout> | undefined;
}

export interface FileThreadPoolOptions {
  /** Threads at most. @default FILE_THREADS */
  size?: number;
  /** The thread's module. @default ./file_thread.ts */
  url?: URL;
  /** @default FILE_THREAD_IDLE_MS */
  idleMs?: number;
}

export class FileThreadPool {
  readonly #size: number;
  readonly #url: URL;
  readonly #idleMs: number;
  #slots: Slot[] = [];
  #queue: Waiting[] = [];
  #next = 1;
  #onLoop = false;
  /** Jobs answered by a thread, run on the loop (no loadable thread), failed with tool_thread_failed. */
  readonly stats = { onThread: 0, onLoop: 0, failed: 0 };

  constructor(o: FileThreadPoolOptions = {}) {
    this.#size = o.size ?? FILE_THREADS;
    this.#url = o.url ?? new URL("./file_thread.ts", import.meta.url);
    this.#idleMs = o.idleMs ?? FILE_THREAD_IDLE_MS;
  }

  /** Live threads now. */
  get threads(): number {
    return this.#slots.length;
  }

  /** Runs read tool `tool` with validated `args` in workspace `dir` on a thread. */
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

  /** Ends every thread; whatever was running or waiting answers `tool_thread_failed`. */
  close(): void {
    for (const s of [...this.#slots]) this.#drop(s);
    for (const w of this.#queue.splice(0)) this.#fail(w);
  }

  #pump() {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.job === null);
      if (!slot) {
        if (this.#slots.length >= this.#size) return;
        slot = this.#spawn();
      }
      const w = this.#queue.shift()!;
      clearTimeout(slot.idle);
      slot.idle = undefined;
      slot.job = w;
      slot.worker.postMessage(w.job);
    }
  }

  #spawn(): Slot {
    const worker = new Worker(this.#url, { type: "module" });
    const slot: Slot = { worker, ready: false, job: null, idle: undefined };
    worker.onmessage = (e: MessageEvent) => this.#answer(slot, e.data);
    worker.onerror = (e) => {
      e.preventDefault();
      if (slot.ready) this.#broken(slot);
      else this.#unloadable();
    };
    worker.onmessageerror = () => this.#broken(slot);
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
    this.stats.onThread++;
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

  /** A thread that died or broke the protocol: its job fails, the queue goes on. */
  #broken(slot: Slot) {
    this.#drop(slot);
    this.#pump();
  }

  /** The thread's module did not load: every job, now and later, runs on the loop. */
  #unloadable() {
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
    slot.worker.onmessage = slot.worker.onerror = slot.worker.onmessageerror = null;
    slot.worker.terminate();
    if (slot.job) this.#fail(slot.job);
    slot.job = null;
  }

  #fail(w: Waiting) {
    this.stats.failed++;
    w.resolve({ ok: false, code: "tool_thread_failed" });
  }
}

/** The Control Plane's one pool; the app closes it on shutdown. */
export const fileThreads: FileThreadPool = new FileThreadPool();
