/**
 * zod runs without its generated parsers in every process of the product
 * (runtime/zod_jitless.ts) [PF-1, PF-2]: every kernel, frame-schema and IPC test runs again here
 * with zod configured as every entry configures it before any schema exists, so each process
 * accepts and refuses the same frames; and each entry's module graph is shown to build its
 * schemas jitless (a probe counts zod's `new Function` calls while parsing them).
 */
import "../../runtime/zod_jitless.ts";
import * as z from "zod";
import { assert, assertEquals } from "../helpers/assert.ts";
import "./harness_kernel_test.ts";
import "./ipc_test.ts";
import "./warm_up_test.ts";

Deno.test("zod runs jitless in this module graph, as in every process of the product", () => {
  assertEquals(z.config().jitless, true);
});

const SCHEMAS = [
  "../../runtime/protocol/events.ts",
  "../../runtime/protocol/worker_frames.ts",
  "../../sandbox/runner_frames.ts",
];

async function probe(entry: string): Promise<{ built: number; schemas: number }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--config",
      new URL("../../deno.json", import.meta.url).pathname,
      "-A",
      new URL("./zod_jitless_probe.ts", import.meta.url).pathname,
      entry,
      ...SCHEMAS,
    ],
    stderr: "inherit",
  }).output();
  assert(out.success);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test("every entry of the product builds its schemas jitless", async () => {
  // The probe sees zod's generated parsers where an entry does not configure zod first.
  const unconfigured = await probe("../../runtime/protocol/events.ts");
  assert(unconfigured.built > 10, JSON.stringify(unconfigured));
  for (
    const entry of [
      "../../main.ts",
      "../../runtime/cli/serve.ts",
      "../../runtime/kernel/worker_main.ts",
      "../../sandbox/runner_entry.ts",
      "../helpers/test_server_entry.ts",
    ]
  ) {
    const r = await probe(entry);
    assert(r.schemas > 50, `${entry}: ${JSON.stringify(r)}`);
    assertEquals(r.built, 0, entry);
  }
});
