/**
 * The `bounded-bash` parser of `exec/run` [TL-7, EX-1]: not a shell. It
 * accepts exactly one builtin of `printf | pwd | true | false` with at most
 * BASH_ARGS_MAX arguments, written as plain words or quoted strings, and
 * returns the argv the runner executes. Pure: no I/O.
 *
 * What this file enforces (each refusal a fixed code, nothing runs):
 *  - `bash_not_builtin`: the first word is not one of the four builtins, or
 *    is quoted or empty;
 *  - `bash_too_many_args`: more than BASH_ARGS_MAX arguments;
 *  - `bash_syntax_refused`: anything that a shell would treat as more than a
 *    literal word — substitution (`$`, backticks), assignments (`a=b` as the
 *    first word), redirection (`<`, `>`), heredocs, subshells and grouping
 *    (`(`, `)`, `{`, `}`), pipes and lists (`|`, `&`, `;`), globs (`*`, `?`,
 *    `[`, `]`), tilde expansion, comments (`#`), history (`!`), backslash
 *    escapes, newlines and control characters, and unterminated quotes.
 * Single quotes are literal; double quotes are literal too but may not
 * contain `$`, a backtick, `\` or `!` (a shell would expand them).
 */
import { AppError } from "../errors.ts";
import { BASH_ARGS_MAX, BOUNDED_BASH_MAX_BYTES } from "../limits.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export const BOUNDED_BASH_BUILTINS = ["printf", "pwd", "true", "false"] as const;
export type BoundedBashBuiltin = typeof BOUNDED_BASH_BUILTINS[number];

const SAFE_UNQUOTED = /^[A-Za-z0-9_./:,+%@=^-]$/;

interface Word {
  text: string;
  quoted: boolean;
}

function refuse(): never {
  throw new AppError("bash_syntax_refused");
}

function tokenize(command: string): Word[] {
  if (utf8Bytes(command) > BOUNDED_BASH_MAX_BYTES) refuse();
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(command)) refuse();
  const words: Word[] = [];
  let i = 0;
  while (i < command.length) {
    const c = command[i];
    if (c === " " || c === "\t") {
      i++;
      continue;
    }
    let text = "";
    let quoted = false;
    let started = false;
    while (i < command.length && command[i] !== " " && command[i] !== "\t") {
      const ch = command[i];
      if (ch === "'") {
        const end = command.indexOf("'", i + 1);
        if (end < 0) refuse();
        text += command.slice(i + 1, end);
        quoted = true;
        i = end + 1;
      } else if (ch === '"') {
        const end = command.indexOf('"', i + 1);
        if (end < 0) refuse();
        const inner = command.slice(i + 1, end);
        if (/[$`\\!]/.test(inner)) refuse();
        text += inner;
        quoted = true;
        i = end + 1;
      } else {
        if (!SAFE_UNQUOTED.test(ch)) refuse();
        // A leading `~` is excluded by SAFE_UNQUOTED; `=` is checked below.
        text += ch;
        i++;
      }
      started = true;
    }
    if (started) words.push({ text, quoted });
  }
  return words;
}

/** Parses `command` into the argv to run; throws a fixed AppError otherwise. */
export function parseBoundedBash(command: string): { builtin: BoundedBashBuiltin; argv: string[] } {
  if (typeof command !== "string") refuse();
  const words = tokenize(command);
  if (words.length === 0) throw new AppError("bash_not_builtin");
  const [first, ...rest] = words;
  // An assignment prefix (`A=1 printf …`) is shell syntax, not a builtin name.
  if (!first.quoted && first.text.includes("=")) refuse();
  const builtin = BOUNDED_BASH_BUILTINS.find((b) => b === first.text);
  if (builtin === undefined || first.quoted) throw new AppError("bash_not_builtin");
  if (rest.length > BASH_ARGS_MAX) throw new AppError("bash_too_many_args");
  return { builtin, argv: [builtin, ...rest.map((w) => w.text)] };
}
