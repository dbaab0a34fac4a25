/**
 * `serve --acp-runner` / `--acp-runner-env` [LC-6] are checked before anything
 * opens: a bad flag is exit 2 with its reason, and `help` documents both.
 */
import { DENO, REPO, RUN_FLAGS } from "../helpers/server.ts";
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";

async function run(args: string[]) {
  const out = await new Deno.Command(DENO, {
    args: [...RUN_FLAGS, `${REPO}/main.ts`, ...args],
    stdin: "null",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("serve refuses a malformed --acp-runner or --acp-runner-env with exit 2 before opening the home", async () => {
  const cases: [string[], RegExp][] = [
    [["--acp-runner", "Bad=/bin/x"], /--acp-runner needs NAME=COMMAND/],
    [["--acp-runner", "a=/bin/x", "--acp-runner", "a=/bin/y"], /--acp-runner a twice/],
    [["--acp-runner", "a=   "], /empty command/],
    [["--acp-runner", "a=/bin/x", "--acp-runner-env", "b=TOKEN"], /--acp-runner-env needs/],
  ];
  for (const [flags, why] of cases) {
    const home = makeTempHome();
    const r = await run(["serve", "--port", "0", "--home", home, ...flags]);
    assertEquals(r.code, 2, flags.join(" "));
    assertMatch(r.stderr, why);
    // Refused before anything opened: no instance lock, no databases.
    assertEquals([...Deno.readDirSync(home)].map((e) => e.name), []);
  }
});

Deno.test("help documents --acp-runner and --acp-runner-env", async () => {
  const help = await run(["help"]);
  assertEquals(help.code, 0);
  assertMatch(help.stdout, /--acp-runner NAME=COMMAND\]\.\.\. \[--acp-runner-env NAME=VAR\]/);
});
