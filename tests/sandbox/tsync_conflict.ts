/**
 * Run as a child process by tsync_test.ts (it installs filters on itself, so it
 * must not run inside the test runner): a Web Worker thread installs its own
 * seccomp filter WITHOUT TSYNC, then the main thread installs the Worker
 * filter's way — with TSYNC. The kernel cannot synchronise the diverged thread
 * and returns its TID; the installer must report that as a failure. Prints the
 * installer's result and the diverged thread's TID as JSON.
 */
import { installSeccompAllThreads } from "../../sandbox/seccomp.ts";
import { encodeProgram, SECCOMP_RET_ALLOW } from "../../sandbox/seccomp_bpf.ts";
import { syscall } from "../../sandbox/libc.ts";

// SECURITY (test only): no_new_privs first, so every thread created later inherits it.
if (syscall("prctl", 38, 1, 0, 0, 0).ret !== 0n) Deno.exit(10);
const thread = new Worker(new URL("./tsync_thread.ts", import.meta.url), { type: "module" });
const tid = await new Promise<number>((resolve) => {
  thread.onmessage = (e: MessageEvent<number>) => resolve(e.data);
  thread.postMessage("install");
});
if (tid <= 0) Deno.exit(11);
const allowAll = encodeProgram([{ code: 0x06, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW }]);
const result = installSeccompAllThreads(allowAll);
console.log(JSON.stringify({ result, tid }));
thread.terminate();
