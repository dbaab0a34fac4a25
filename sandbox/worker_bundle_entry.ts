/**
 * The entry of the pre-bundled Worker [PF-1, PF-5]: a non-compiled Worker
 * runs builds of this one file instead of main.ts and its few hundred modules
 * (tools/build/worker.ts, docs/performance.md). Stage 1 runs `dist/worker.js`
 * (an ES module) and execve's into `dist/worker_stage2.js`, which evaluates
 * the same entry built as one script.
 *
 * What this file enforces: nothing of its own — it is `main.ts worker`
 * without the other sub-commands, through the same `workerCommand`; the
 * Worker body is loaded by stage 2 alone, under Landlock, no_new_privs and the
 * sandbox uid, before seccomp and attestation.
 */
import { workerCommand } from "./worker_entry.ts";

if (import.meta.main) {
  workerCommand(Deno.args, {
    body: {
      load: async () => (await import("../runtime/kernel/worker_main.ts")).harnessWorkerBody,
    },
    // Both files are builds of this entry (tools/build/worker.ts). Stage 2 cannot reach
    // Deno's code cache under Landlock anyway; without it Deno starts one thread fewer.
    stage2: {
      module: new URL("worker_stage2.js", import.meta.url),
      argsPrefix: [],
      denoFlags: ["--no-code-cache"],
    },
  }).then((code) => Deno.exit(code));
}
