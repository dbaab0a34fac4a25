/**
 * The shipped example skills [LC-3] (examples/skills/): packed exactly as
 * examples/skills/README.md says (`tar --format=ustar … -czf`), verified by
 * the product's archive checks with their SHA-256, and run in the runner
 * with sample arguments: their answers are what the README shows.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { sha256Hex, verifySkillArchive } from "../../runtime/skills/archive.ts";
import { runSkillScript } from "../../runtime/skills/skill_run.ts";
import { validateToolArgs } from "../../runtime/tools/policy.ts";

const EXAMPLES = new URL("../../examples/skills/", import.meta.url).pathname;

async function pack(name: string): Promise<Uint8Array> {
  const out = Deno.makeTempFileSync({ suffix: ".tar.gz" });
  try {
    const r = await new Deno.Command("tar", {
      args: [
        "--format=ustar",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "-czf",
        out,
        "skill.json",
        "main.ts",
      ],
      cwd: `${EXAMPLES}${name}`,
    }).output();
    assertEquals(r.code, 0, new TextDecoder().decode(r.stderr));
    return Deno.readFileSync(out);
  } finally {
    Deno.removeSync(out);
  }
}

async function run(name: string, args: Record<string, unknown>) {
  const bytes = await pack(name);
  const v = await verifySkillArchive(bytes, await sha256Hex(bytes));
  assertEquals(v.manifest.name, name);
  const checked = validateToolArgs(v.spec, args);
  assert(checked.ok, "the sample arguments fit the declared schema");
  const r = await runSkillScript({
    skill: {
      name,
      entry: v.manifest.entry,
      manifestText: v.manifestText,
      script: v.script,
    },
    args: checked.args,
    runKey: crypto.randomUUID(),
  });
  assert(r.ok, JSON.stringify(r));
  return JSON.parse(r.text);
}

Deno.test("example word-stats packs as the README says and answers with counts and frequent words", async () => {
  const r = await run("word-stats", { text: "the cat and the hat\nthe end", top: 2 });
  assertEquals(r.exit_code, 0);
  assertEquals(
    r.answer,
    "lines: 2\nwords: 7\ncharacters: 27\nmost frequent: the (3), and (1)\n",
  );
});

Deno.test("example csv-table prints a Markdown table and leaves table.md in its output directory", async () => {
  const r = await run("csv-table", {
    csv: 'name,qty\n"bolt, M4",12\nnut,7\n',
    align_numbers: true,
  });
  assertEquals(r.exit_code, 0);
  assertEquals(
    r.answer,
    "| name | qty |\n| --- | ---: |\n| bolt, M4 | 12 |\n| nut | 7 |\n\n2 rows × 2 columns\n",
  );
  assertEquals(r.output_files, [{ path: "table.md", size: 60 }]);
});
