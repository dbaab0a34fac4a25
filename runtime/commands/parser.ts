/**
 * Slash-command input parser [SC-1]. Pure: turns one line of composer input
 * into `{name, args}` or refuses with a fixed code, before any Turn admission.
 *
 * Enforced here: input ≤ COMMAND_INPUT_MAX_BYTES UTF-8 bytes, starts with `/`,
 * no NUL/CR/LF/tab (nor any other C0 control or DEL), tokens separated by
 * exactly one space (empty tokens — leading, trailing or doubled spaces — are
 * refused), ≤ COMMAND_ARGS_MAX args of ≤ COMMAND_ARG_MAX_BYTES bytes each, and
 * a name that the registry knows (as a command or a registered alias).
 */
import { AppError } from "../errors.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import { COMMAND_ARG_MAX_BYTES, COMMAND_ARGS_MAX, COMMAND_INPUT_MAX_BYTES } from "../limits.ts";

/** A command name as typed after the slash: lower-case word, ≤ 32 chars. */
export const COMMAND_NAME_RE = /^[a-z][a-z0-9-]{0,31}$/;

export interface ParsedCommand {
  /** The name as typed (may be an alias). */
  typed: string;
  args: string[];
}

/** UTF-8 byte length: the one owner is runtime/protocol/digest.ts. */
export { utf8Bytes };

/**
 * Splits and validates the input. It does not resolve the name; the registry
 * does (so `command_unknown` and arity checks live next to the entries).
 */
export function tokenizeCommand(input: string): ParsedCommand {
  // Measure bytes before anything else so huge inputs are refused cheaply.
  if (input.length > COMMAND_INPUT_MAX_BYTES || utf8Bytes(input) > COMMAND_INPUT_MAX_BYTES) {
    throw new AppError("command_invalid", "input too long");
  }
  if (!input.startsWith("/")) throw new AppError("command_invalid", "no slash");
  // SECURITY: control characters (NUL, CR, LF, tab, …) could smuggle a second
  // line or confuse logs; refuse them all.
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(input)) throw new AppError("command_invalid", "control char");
  if (/[\u0085\u2028\u2029]/.test(input)) throw new AppError("command_invalid", "line separator");
  const tokens = input.slice(1).split(" ");
  if (tokens.some((t) => t.length === 0)) throw new AppError("command_invalid", "empty token");
  const [typed, ...args] = tokens;
  if (!COMMAND_NAME_RE.test(typed)) throw new AppError("command_invalid", "bad name");
  if (args.length > COMMAND_ARGS_MAX) throw new AppError("command_invalid", "too many args");
  for (const a of args) {
    if (utf8Bytes(a) > COMMAND_ARG_MAX_BYTES) throw new AppError("command_invalid", "arg too long");
  }
  return { typed, args };
}
