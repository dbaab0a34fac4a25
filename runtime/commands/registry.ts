/**
 * The slash-command registry [SC-1]: at most COMMAND_REGISTRY_MAX lookup
 * entries (names plus aliases), no duplicates, every name and alias a valid
 * command word. Resolution refuses names that are not registered (including
 * aliases that were never declared) with `command_unknown`, and checks each
 * command's arity and argument patterns with `command_invalid`.
 */
import { AppError } from "../errors.ts";
import { COMMAND_REGISTRY_MAX } from "../limits.ts";
import { COMMAND_NAME_RE, type ParsedCommand } from "./parser.ts";
import type { ConversationFacts } from "./ports.ts";

export interface CommandArgSpec {
  name: string;
  required: boolean;
  description: string;
  /** Anchored pattern every value must match. */
  pattern: RegExp;
}

/** What a command asks the UI to do with the *next* Turn (never a Turn itself). */
export type CommandEffect =
  | { type: "set_model"; model_id: string }
  | { type: "compact_next_turn" }
  | { type: "compact_summary" }
  | { type: "new_conversation" };

export interface CommandLine {
  label: string;
  value: string;
}

export interface CommandOutput {
  title: string;
  lines: CommandLine[];
  effect?: CommandEffect;
}

export interface CommandTarget {
  agentId: string;
  conversationId: string;
  /** Facts of the Conversation, looked up (and so proven to exist) before the command runs. */
  conversation: ConversationFacts;
}

export interface CommandSpec<Ports> {
  name: string;
  aliases: readonly string[];
  summary: string;
  args: readonly CommandArgSpec[];
  run(ports: Ports, target: CommandTarget, args: string[]): Promise<CommandOutput>;
}

/** The public description served by `GET …/commands` (the composer's help panel). */
export interface CommandDescriptor {
  name: string;
  aliases: string[];
  summary: string;
  usage: string;
  args: { name: string; required: boolean; description: string; pattern: string }[];
}

export interface CommandRegistry<Ports> {
  resolve(parsed: ParsedCommand): { spec: CommandSpec<Ports>; args: string[] };
  describe(): CommandDescriptor[];
  /** Number of lookup entries (names + aliases), ≤ COMMAND_REGISTRY_MAX. */
  size: number;
}

export function usageOf(spec: CommandSpec<unknown>): string {
  const parts = spec.args.map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`));
  return [`/${spec.name}`, ...parts].join(" ");
}

export function createRegistry<Ports>(
  specs: readonly CommandSpec<Ports>[],
): CommandRegistry<Ports> {
  const table = new Map<string, CommandSpec<Ports>>();
  for (const spec of specs) {
    for (const key of [spec.name, ...spec.aliases]) {
      if (!COMMAND_NAME_RE.test(key)) throw new Error(`invalid command name ${key}`);
      if (table.has(key)) throw new Error(`duplicate command name ${key}`);
      table.set(key, spec);
    }
    let optionalSeen = false;
    for (const a of spec.args) {
      if (!a.required) optionalSeen = true;
      else if (optionalSeen) throw new Error(`required arg after optional in /${spec.name}`);
    }
  }
  if (table.size > COMMAND_REGISTRY_MAX) {
    throw new Error(`command registry has ${table.size} entries, max ${COMMAND_REGISTRY_MAX}`);
  }
  return {
    size: table.size,
    resolve(parsed) {
      const spec = table.get(parsed.typed);
      if (spec === undefined) throw new AppError("command_unknown");
      const { args } = parsed;
      const required = spec.args.filter((a) => a.required).length;
      if (args.length < required || args.length > spec.args.length) {
        throw new AppError("command_invalid", "arity");
      }
      args.forEach((value, i) => {
        if (!spec.args[i].pattern.test(value)) throw new AppError("command_invalid", "arg pattern");
      });
      return { spec, args };
    },
    describe() {
      return specs.map((s) => ({
        name: s.name,
        aliases: [...s.aliases],
        summary: s.summary,
        usage: usageOf(s as CommandSpec<unknown>),
        args: s.args.map((a) => ({
          name: a.name,
          required: a.required,
          description: a.description,
          pattern: a.pattern.source,
        })),
      }));
    },
  };
}
