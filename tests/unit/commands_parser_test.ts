/** Slash-command tokenizer and registry bounds [SC-1], as case tables. */
import { assertEquals, assertThrows } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  COMMAND_ARG_MAX_BYTES,
  COMMAND_ARGS_MAX,
  COMMAND_INPUT_MAX_BYTES,
  COMMAND_REGISTRY_MAX,
} from "../../runtime/limits.ts";
import { tokenizeCommand } from "../../runtime/commands/parser.ts";
import { type CommandSpec, createRegistry } from "../../runtime/commands/registry.ts";
import { BUILTIN_COMMANDS } from "../../runtime/commands/builtin.ts";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return "ok";
}

Deno.test("tokenizeCommand splits a name and single-space separated args", () => {
  assertEquals(tokenizeCommand("/status"), { typed: "status", args: [] });
  assertEquals(tokenizeCommand("/model qwen3.5:2b"), { typed: "model", args: ["qwen3.5:2b"] });
  assertEquals(tokenizeCommand("/x a b c d"), { typed: "x", args: ["a", "b", "c", "d"] });
});

Deno.test("tokenizeCommand refuses hostile or malformed input with command_invalid", () => {
  const cases: [string, string][] = [
    ["status", "no leading slash"],
    ["/", "empty name"],
    ["/status ", "trailing space is an empty token"],
    ["/ status", "leading empty token"],
    ["/model  a", "doubled space"],
    ["/status\u0000", "NUL"],
    ["/status\r", "CR"],
    ["/status\nrm", "LF"],
    ["/model\ta", "tab"],
    ["/status\u2028", "line separator"],
    ["/Status", "upper-case name"],
    ["/st@tus", "symbol in name"],
    ["/x a b c d e", "five args"],
  ];
  for (const [input, why] of cases) {
    assertEquals(code(() => tokenizeCommand(input)), "command_invalid", why);
  }
});

function detail(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err.detail;
    throw err;
  }
  return "ok";
}

Deno.test("tokenizeCommand measures the input byte bound before anything else", () => {
  // At exactly the bound the input passes the size check (and fails later on the arg bound);
  // one byte more fails on the size check itself. Multi-byte characters count as bytes.
  const at = `/x ${"a".repeat(COMMAND_INPUT_MAX_BYTES - 3)}`;
  assertEquals(new TextEncoder().encode(at).byteLength, COMMAND_INPUT_MAX_BYTES);
  assertEquals(detail(() => tokenizeCommand(at)), "arg too long");
  assertEquals(detail(() => tokenizeCommand(`${at}a`)), "input too long");
  const euro = "€".repeat(Math.floor(COMMAND_INPUT_MAX_BYTES / 3));
  assertEquals(detail(() => tokenizeCommand(`/x ${euro}`)), "input too long");
  assertEquals(code(() => tokenizeCommand(`/x ${euro}`)), "command_invalid");
});

Deno.test("tokenizeCommand bounds args at COMMAND_ARGS_MAX and COMMAND_ARG_MAX_BYTES", () => {
  const args = Array.from({ length: COMMAND_ARGS_MAX }, (_, i) => `a${i}`);
  assertEquals(tokenizeCommand(`/x ${args.join(" ")}`).args.length, COMMAND_ARGS_MAX);
  assertEquals(code(() => tokenizeCommand(`/x ${[...args, "z"].join(" ")}`)), "command_invalid");
  const max = "b".repeat(COMMAND_ARG_MAX_BYTES);
  assertEquals(tokenizeCommand(`/x ${max}`).args[0].length, COMMAND_ARG_MAX_BYTES);
  assertEquals(code(() => tokenizeCommand(`/x ${max}b`)), "command_invalid");
  // 86 × "€" = 258 bytes but only 86 code units.
  assertEquals(code(() => tokenizeCommand(`/x ${"€".repeat(86)}`)), "command_invalid");
});

Deno.test("the builtin registry resolves names and declared aliases only", () => {
  const reg = createRegistry(BUILTIN_COMMANDS);
  const resolved = (s: string) => reg.resolve(tokenizeCommand(s)).spec.name;
  assertEquals(resolved("/ctx"), "context");
  assertEquals(resolved("/perms"), "permissions");
  assertEquals(resolved("/stop"), "cancel");
  assertEquals(resolved("/clear"), "clear");
  for (const unknown of ["/st", "/help", "/quit", "/permission", "/cancelled", "/compacts"]) {
    assertEquals(code(() => reg.resolve(tokenizeCommand(unknown))), "command_unknown", unknown);
  }
  assertEquals(
    reg.describe().map((d) => d.usage),
    [
      "/status",
      "/context [run_id]",
      "/model [model_id]",
      "/compact",
      "/permissions",
      "/cancel [run_id]",
      "/clear",
    ],
  );
});

Deno.test("the registry checks arity and argument patterns", () => {
  const reg = createRegistry(BUILTIN_COMMANDS);
  const c = (s: string) => code(() => reg.resolve(tokenizeCommand(s)));
  assertEquals(c("/status extra"), "command_invalid");
  assertEquals(c("/context run1 run2"), "command_invalid");
  assertEquals(c("/context ../etc"), "command_invalid");
  assertEquals(c("/model <script>"), "command_invalid");
  assertEquals(c("/context run_01"), "ok");
});

Deno.test("createRegistry refuses more than COMMAND_REGISTRY_MAX entries and duplicates", () => {
  const spec = (name: string, aliases: string[] = []): CommandSpec<unknown> => ({
    name,
    aliases,
    summary: "",
    args: [],
    run: () => Promise.resolve({ title: "", lines: [] }),
  });
  const full = Array.from({ length: COMMAND_REGISTRY_MAX }, (_, i) => spec(`c${i}`));
  assertEquals(createRegistry(full).size, COMMAND_REGISTRY_MAX);
  assertThrows(() => createRegistry([...full, spec("one-more")]));
  // Aliases count as entries too.
  assertThrows(() => createRegistry([...full.slice(1), spec("c0", ["alias"])]));
  assertThrows(() => createRegistry([spec("a"), spec("b", ["a"])]));
  assertThrows(() => createRegistry([spec("Bad")]));
});
