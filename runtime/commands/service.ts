/**
 * Executes one slash command [SC-1]: tokenize → resolve → run → bound. The
 * result always says `model_invoked: false, turn_created: false`, is ≤
 * COMMAND_RESULT_MAX_BYTES serialized (trailing lines are dropped with a fixed
 * marker when a listing would exceed it), and is never written anywhere: the
 * service has no transcript handle at all.
 */
import { COMMAND_RESULT_MAX_BYTES } from "../limits.ts";
import { BUILTIN_COMMANDS } from "./builtin.ts";
import { tokenizeCommand, utf8Bytes } from "./parser.ts";
import type { CommandPorts } from "./ports.ts";
import {
  type CommandDescriptor,
  type CommandEffect,
  type CommandLine,
  type CommandSpec,
  createRegistry,
} from "./registry.ts";

export interface CommandResult {
  command: string;
  model_invoked: false;
  turn_created: false;
  title: string;
  lines: CommandLine[];
  effect: CommandEffect | null;
  truncated: boolean;
}

export interface CommandService {
  describe(): CommandDescriptor[];
  execute(agentId: string, conversationId: string, input: string): Promise<CommandResult>;
}

const TRUNCATION_LINE: CommandLine = { label: "…", value: "output truncated" };

/** Drops trailing lines until the serialized result fits the bound. */
export function boundResult(result: CommandResult, max = COMMAND_RESULT_MAX_BYTES): CommandResult {
  if (utf8Bytes(JSON.stringify(result)) <= max) return result;
  const lines = [...result.lines];
  const clip = (v: string) => (v.length > 1024 ? `${v.slice(0, 1024)}…` : v);
  let out: CommandResult = {
    ...result,
    truncated: true,
    lines: lines.map((l) => ({ label: clip(l.label), value: clip(l.value) })),
  };
  while (utf8Bytes(JSON.stringify({ ...out, lines: [...out.lines, TRUNCATION_LINE] })) > max) {
    out = { ...out, lines: out.lines.slice(0, Math.max(0, Math.floor(out.lines.length * 0.75))) };
    if (out.lines.length === 0) break;
  }
  return { ...out, lines: [...out.lines, TRUNCATION_LINE] };
}

export function createCommandService(
  ports: CommandPorts,
  specs: readonly CommandSpec<CommandPorts>[] = BUILTIN_COMMANDS,
): CommandService {
  const registry = createRegistry(specs);
  return {
    describe: () => registry.describe(),
    async execute(agentId, conversationId, input) {
      const { spec, args } = registry.resolve(tokenizeCommand(input));
      // The target must exist (unknown or foreign ids → 404) before any command runs.
      const conversation = await ports.conversation(agentId, conversationId);
      const output = await spec.run(ports, { agentId, conversationId, conversation }, args);
      return boundResult({
        command: spec.name,
        model_invoked: false,
        turn_created: false,
        title: output.title,
        lines: output.lines,
        effect: output.effect ?? null,
        truncated: false,
      });
    },
  };
}
