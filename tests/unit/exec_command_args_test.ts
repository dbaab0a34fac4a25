/**
 * exec/command argument rules [EX-2]: each bound at the limit and one past
 * it, NUL, programs that are not bare names on the fixed search path, and
 * working directories outside the workspace — each with its fixed code.
 */
import { assertEquals } from "../helpers/assert.ts";
import { checkCommandArgs, resolveProgram } from "../../runtime/exec/command_args.ts";
import {
  COMMAND_ARG_MAX_ITEM_BYTES,
  COMMAND_ARGV_MAX_ITEMS,
  COMMAND_ARGV_MAX_TOTAL_BYTES,
  TASK_WALL_MAX_MS,
} from "../../runtime/limits.ts";

const code = (args: Record<string, unknown>) => {
  const r = checkCommandArgs(args, { denoPath: "/opt/deno" });
  return r.ok ? "ok" : r.code;
};

Deno.test("argv bounds: 64 items, 4 KiB each, 16 KiB in all, no NUL", () => {
  assertEquals(code({ argv: [] }), "exec_argv_invalid");
  assertEquals(code({ argv: ["true"] }), "ok");
  assertEquals(code({ argv: Array(COMMAND_ARGV_MAX_ITEMS).fill("true") }), "ok");
  assertEquals(code({ argv: Array(COMMAND_ARGV_MAX_ITEMS + 1).fill("true") }), "exec_argv_invalid");
  assertEquals(code({ argv: ["echo", "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES)] }), "ok");
  assertEquals(
    code({ argv: ["echo", "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES + 1)] }),
    "exec_argv_invalid",
  );
  // Multi-byte text counts in UTF-8 bytes: 2048 × "é" is exactly 4 KiB.
  assertEquals(code({ argv: ["echo", "é".repeat(2048)] }), "ok");
  assertEquals(code({ argv: ["echo", "é".repeat(2048) + "x"] }), "exec_argv_invalid");
  const four = "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES);
  // "echo" (4 bytes) + 3 full items + one item 4 bytes short = exactly 16 KiB.
  const atTotal = ["echo", four, four, four, "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES - 4)];
  assertEquals(atTotal.join("").length, COMMAND_ARGV_MAX_TOTAL_BYTES);
  assertEquals(code({ argv: atTotal }), "ok");
  assertEquals(code({ argv: [...atTotal, "x"] }), "exec_argv_invalid");
  assertEquals(code({ argv: ["echo", "a\u0000b"] }), "exec_argv_invalid");
  assertEquals(code({ argv: "echo hi" }), "exec_argv_invalid");
});

Deno.test("argv[0] must be a bare name on /usr/local/bin:/usr/bin:/bin, or deno", () => {
  assertEquals(code({ argv: ["/bin/sh"] }), "exec_unknown_program");
  assertEquals(code({ argv: ["./run.sh"] }), "exec_unknown_program");
  assertEquals(code({ argv: [".."] }), "exec_unknown_program");
  assertEquals(code({ argv: ["no-such-program-here"] }), "exec_unknown_program");
  assertEquals(code({ argv: [""] }), "exec_unknown_program");
  assertEquals(resolveProgram("sh")?.endsWith("/sh"), true);
  assertEquals(resolveProgram("deno", { dirs: [], denoPath: "/opt/deno" }), "/opt/deno");
});

Deno.test("cwd is a canonical workspace-relative path; timeout_s is 1..120", () => {
  assertEquals(code({ argv: ["true"], cwd: "src" }), "ok");
  assertEquals(code({ argv: ["true"], cwd: "." }), "ok");
  assertEquals(code({ argv: ["true"], cwd: "../x" }), "exec_cwd_invalid");
  assertEquals(code({ argv: ["true"], cwd: "/etc" }), "exec_cwd_invalid");
  assertEquals(code({ argv: ["true"], cwd: "a//b" }), "exec_cwd_invalid");
  assertEquals(code({ argv: ["true"], timeout_s: 1 }), "ok");
  assertEquals(code({ argv: ["true"], timeout_s: 120 }), "ok");
  assertEquals(code({ argv: ["true"], timeout_s: 0 }), "tool_invalid_arguments");
  assertEquals(code({ argv: ["true"], timeout_s: 121 }), "tool_invalid_arguments");
  const r = checkCommandArgs({ argv: ["true"] });
  assertEquals(r.ok && r.request.timeoutS, 60);
});

Deno.test("background: a boolean; its timeout_s is 1..1800 (default 1800) [EX-6]", () => {
  const req = (args: Record<string, unknown>) => {
    const r = checkCommandArgs({ argv: ["true"], ...args }, { denoPath: "/opt/deno" });
    return r.ok ? [r.request.background, r.request.timeoutS] : r.code;
  };
  assertEquals(req({}), [false, 60]);
  assertEquals(req({ background: false, timeout_s: 120 }), [false, 120]);
  assertEquals(req({ background: false, timeout_s: 121 }), "tool_invalid_arguments");
  assertEquals(req({ background: true }), [true, TASK_WALL_MAX_MS / 1000]);
  assertEquals(req({ background: true, timeout_s: 1 }), [true, 1]);
  assertEquals(req({ background: true, timeout_s: 1800 }), [true, 1800]);
  assertEquals(req({ background: true, timeout_s: 1801 }), "tool_invalid_arguments");
  assertEquals(req({ background: true, timeout_s: 0 }), "tool_invalid_arguments");
  assertEquals(req({ background: "yes" }), "tool_invalid_arguments");
});
