/**
 * `deno task compile`: builds the single executable `dist/agent-builder`.
 * `deno compile` needs Deno's runtime base (denort) from Deno's CDN; where the
 * CDN is unreachable, point DENORT_BIN at a local denort binary of the same
 * version. This script says clearly which of the two it could not do.
 */
import { buildUi } from "./ui.ts";

const root = new URL("../../", import.meta.url).pathname;
const deno = Deno.execPath();

await buildUi(true);
const args = [
  "compile",
  "--config",
  `${root}deno.json`,
  "--no-prompt",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-ffi",
  "--allow-run",
  "--allow-env",
  "--allow-sys",
  // The tokenizer thread is loaded by URL at runtime [CX-7]: the graph must carry it.
  "--include",
  `${root}runtime/context/tokenizer_worker.ts`,
  "--output",
  `${root}dist/agent-builder`,
  `${root}main.ts`,
];
const denort = Deno.env.get("DENORT_BIN");
if (denort) console.log(`using DENORT_BIN=${denort}`);
const out = await new Deno.Command(deno, { args, cwd: root, stdout: "inherit", stderr: "piped" })
  .output();
const err = new TextDecoder().decode(out.stderr);
if (!out.success) {
  await Deno.stderr.write(out.stderr);
  if (!denort && /denort|download|dl\.deno|network|dns|connect/i.test(err)) {
    console.error(
      "\ncompile: Deno's runtime base (denort) could not be downloaded from Deno's CDN.\n" +
        "Set DENORT_BIN to a local denort binary of the pinned Deno version and retry,\n" +
        "or use the repository launcher ./agent-builder, which behaves identically.",
    );
  }
  Deno.exit(1);
}
console.log(`built ${root}dist/agent-builder`);
