/**
 * The entry of the pre-bundled Worker `dist/worker.js` [PF-1, PF-5]: both
 * stages of a non-compiled Worker run this one file instead of main.ts and
 * its few hundred modules (see tools/build/worker.ts and docs/performance.md).
 *
 * What this file enforces: nothing of its own — it is `main.ts worker`
 * without the other sub-commands. Stage 1 execve's this same file into stage
 * 2 (so both stages run the same code), and the Worker body is loaded only
 * in stage 2, after confinement and attestation.
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
