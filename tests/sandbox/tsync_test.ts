/**
 * TSYNC [SB-2]: when the kernel cannot put the filter on every thread it
 * returns the TID of the thread it could not synchronise — a positive number,
 * not -1. The installer must treat that as a failure (stage 2 then reports
 * `seccomp_tsync` and no Run starts), never as "mostly installed".
 */
import { assertEquals } from "../helpers/assert.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";

Deno.test("a filter TSYNC cannot put on every thread is a failure naming that thread", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      ...denoRunFlags(),
      // SECURITY (test only): the Web Worker loads its modules from the repository.
      `--allow-read=${new URL("../../", import.meta.url).pathname}`,
      new URL("./tsync_conflict.ts", import.meta.url).pathname,
    ],
    stderr: "inherit",
  }).output();
  assertEquals(out.code, 0);
  const { result, tid } = JSON.parse(new TextDecoder().decode(out.stdout));
  assertEquals(result, { ok: false, reason: "tsync_failed", tid });
});
