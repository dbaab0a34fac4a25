/** [SC-1, #18] Enter on a unique command prefix runs the match shown; nothing else is rewritten. */
import { assertEquals } from "../helpers/assert.ts";
import { resolveCommandInput } from "../../ui/lib/command_input.ts";
import type { CommandDescriptor } from "../../ui/lib/types.ts";

const cmd = (name: string, aliases: string[] = []): CommandDescriptor => ({
  name,
  aliases,
  summary: "",
  usage: `/${name}`,
  args: [],
});
const COMMANDS = [
  cmd("status"),
  cmd("model"),
  cmd("compact"),
  cmd("context"),
  cmd("cancel", [
    "stop",
  ]),
  cmd("permissions", ["perms"]),
  cmd("clear"),
];

Deno.test("a unique prefix becomes its command, arguments kept", () => {
  assertEquals(resolveCommandInput("/perm", COMMANDS), "/permissions");
  assertEquals(resolveCommandInput("/sta", COMMANDS), "/status");
  assertEquals(resolveCommandInput("/mo qwen3.5:2b", COMMANDS), "/model qwen3.5:2b");
  assertEquals(resolveCommandInput("/st", COMMANDS), "/st", "status and stop: ambiguous");
});

Deno.test("exact names, aliases, ambiguous or unknown input and plain text are sent as typed", () => {
  for (const s of ["/stop", "/perms", "/clear", "/co", "/nope", "hello /status", "/"]) {
    assertEquals(resolveCommandInput(s, COMMANDS), s);
  }
});
