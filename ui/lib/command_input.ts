/**
 * What Enter sends for slash input [SC-1, #18]: a command name typed in part
 * runs the one command it matches (the match the help panel shows); an exact
 * name or alias, an ambiguous prefix or no match is sent as typed (the server
 * answers `command_unknown` for the last two). Pure.
 */
import type { CommandDescriptor } from "./types.ts";

/** Commands whose name or an alias starts with `typed`. */
export function commandMatches(
  commands: readonly CommandDescriptor[],
  typed: string,
): CommandDescriptor[] {
  return commands.filter((c) =>
    c.name.startsWith(typed) || c.aliases.some((a) => a.startsWith(typed))
  );
}

/** The input with a unique prefix expanded to its command's name. */
export function resolveCommandInput(input: string, commands: readonly CommandDescriptor[]): string {
  const m = /^\/(\S+)(.*)$/s.exec(input);
  if (!m) return input;
  const [, typed, rest] = m;
  if (commands.some((c) => c.name === typed || c.aliases.includes(typed))) return input;
  const matches = commandMatches(commands, typed);
  return matches.length === 1 ? `/${matches[0].name}${rest}` : input;
}
