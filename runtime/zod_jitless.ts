/**
 * The first import of every entry of the product [PF-1, PF-2]: main.ts (the server and every
 * internal mode), the serve command, the Worker body and the runner. zod compiles each object
 * schema's parser with `new Function` the first time it parses; that pays off only after about a
 * thousand parses of the same schema (measured here: compiling one event payload's parser costs
 * ~1.8 ms, and saves ~1.4 µs per parse). A Worker serves one Run and parses a few dozen frames;
 * the server parses a few dozen journal events of ~40 kinds per Run, so its first Runs paid for the
 * compilations: measured on a fresh server (one Run at a time, CPU of its event-loop thread, five
 * runs each), the first Run 61 → 55 ms, the second 37 → 32 ms, the third equal (30 ms). zod reads
 * the flag when a schema is built, so this runs before any schema exists (ES modules evaluate their
 * imports in order, depth first); tests/unit/zod_jitless_test.ts checks every entry.
 *
 * What this file enforces: nothing, and it weakens nothing — zod runs the same checks either way;
 * only its generated fast path is not used.
 */
import * as z from "zod";

z.config({ jitless: true });
