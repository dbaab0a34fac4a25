/** bounded-bash is not a shell [TL-7]: one builtin, ≤ 8 plain or quoted args, everything else refused with a fixed code. */
import { assertEquals } from "../helpers/assert.ts";
import { parseBoundedBash } from "../../runtime/exec/bounded_bash.ts";
import { AppError } from "../../runtime/errors.ts";

const codeOf = (cmd: string) => {
  try {
    return parseBoundedBash(cmd).argv;
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
};

Deno.test("the four builtins with plain and quoted arguments become an argv", () => {
  assertEquals(codeOf("pwd"), ["pwd"]);
  assertEquals(codeOf("true"), ["true"]);
  assertEquals(codeOf("  false  "), ["false"]);
  assertEquals(codeOf("printf 'hello %s\\n' world"), ["printf", "hello %s\\n", "world"]);
  assertEquals(codeOf('printf "a b" c=d 1,2 x/y.z'), ["printf", "a b", "c=d", "1,2", "x/y.z"]);
  assertEquals(codeOf("printf 'it''s'"), ["printf", "its"]);
  assertEquals(codeOf("printf ''"), ["printf", ""]);
});

Deno.test("8 arguments are accepted, 9 are bash_too_many_args", () => {
  assertEquals(codeOf("printf 1 2 3 4 5 6 7 8").length, 9);
  assertEquals(codeOf("printf 1 2 3 4 5 6 7 8 9"), "bash_too_many_args");
});

Deno.test("anything but the four builtins is bash_not_builtin", () => {
  for (
    const c of [
      "ls",
      "echo hi",
      "cat /etc/passwd",
      "'printf' x",
      "sh -c true",
      "",
      "   ",
      "Printf x",
    ]
  ) {
    assertEquals(codeOf(c), "bash_not_builtin", c);
  }
});

Deno.test("shell syntax is bash_syntax_refused", () => {
  for (
    const c of [
      "printf a | cat", // pipe
      "printf a; rm -rf x", // list
      "printf a && true",
      "printf a & ",
      "printf $HOME", // parameter expansion
      'printf "$HOME"',
      "printf $(id)", // command substitution
      "printf `id`", // backticks
      'printf "`id`"',
      "A=1 printf x", // assignment
      "printf > out", // redirection
      "printf < in",
      "printf <<EOF", // heredoc
      "(printf x)", // subshell
      "{ printf x; }",
      "printf *", // glob
      "printf ?",
      "printf [ab]",
      "printf ~", // tilde
      "printf a # comment",
      "printf !!", // history
      'printf "a!"',
      "printf a\\ b", // backslash escape
      'printf "a\\nb"',
      "printf 'unterminated",
      'printf "unterminated',
      "printf a\nrm x", // newline
      "printf a\u0007",
    ]
  ) {
    assertEquals(codeOf(c), "bash_syntax_refused", JSON.stringify(c));
  }
});
