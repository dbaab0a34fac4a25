/**
 * The Worker's zod runs without its generated parsers (runtime/kernel/zod_jitless.ts) [PF-1]:
 * every kernel, frame-schema and IPC test runs again here with zod configured exactly as the
 * Worker body configures it before any schema exists, so the Worker accepts and refuses the
 * same frames as the Control Plane.
 */
import "../../runtime/kernel/zod_jitless.ts";
import * as z from "zod";
import { assertEquals } from "../helpers/assert.ts";
import "./harness_kernel_test.ts";
import "./ipc_test.ts";
import "./warm_up_test.ts";

Deno.test("zod runs jitless in this module graph, as in a Worker", () => {
  assertEquals(z.config().jitless, true);
});
