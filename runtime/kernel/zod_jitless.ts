/**
 * The Worker body's first import [PF-1]: zod compiles each object schema's
 * parser with `new Function` the first time it parses. A Worker serves one Run
 * and parses a few dozen frames, so compiling costs it more than it saves:
 * about 10 ms of CPU more on its first Turn (measured with the warm-up Turn;
 * docs/performance.md). zod reads the flag when a schema is built, so this
 * runs before any schema of the body or the IPC framing exists (stage 2 loads
 * the body before the framing, sandbox/worker_entry.ts).
 *
 * What this file enforces: nothing, and it weakens nothing — zod runs the same
 * checks either way; only its generated fast path is not used. It changes the
 * Worker process only: the Control Plane never imports the Worker body.
 */
import * as z from "zod";

z.config({ jitless: true });
