/**
 * The git status section [CX-9]: porcelain v2 parsed into branch, counts and
 * at most 64 listed paths (64 listed whole, 65 ⇒ "1 more"), an output over
 * 16 KiB read only to its bound with the counts marked as lower bounds, and
 * 10,000 changes still a short section.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { gitStatusText, parseGitStatus } from "../../runtime/context/git_status.ts";
import { GIT_STATUS_OUTPUT_MAX_BYTES, GIT_STATUS_PATHS_MAX } from "../../runtime/limits.ts";

const HEAD = [
  "# branch.oid 1234567890abcdef1234567890abcdef12345678",
  "# branch.head main",
  "# branch.upstream origin/main",
  "# branch.ab +2 -1",
];
const untracked = (n: number) => Array.from({ length: n }, (_, i) => `? f${i}.txt`);

Deno.test("parseGitStatus() reads the branch, ahead/behind and each kind of entry", () => {
  const raw = [
    ...HEAD,
    "1 .M N... 100644 100644 100644 aaaa bbbb src/a.ts",
    "1 A. N... 000000 100644 100644 0000 cccc added file.ts",
    "1 D. N... 100644 000000 000000 dddd 0000 gone.ts",
    "2 R. N... 100644 100644 100644 eeee eeee R100 new.ts\told.ts",
    "u UU N... 100644 100644 100644 100644 a b c both.ts",
    "? notes.md",
    "",
  ].join("\n");
  const s = parseGitStatus(raw);
  assertEquals([s.branch, s.ahead, s.behind, s.total, s.cut], ["main", 2, 1, 6, false]);
  assertEquals(s.counts, {
    modified: 1,
    added: 1,
    deleted: 1,
    renamed: 1,
    untracked: 1,
    conflicted: 1,
  });
  assertEquals(s.paths.map((p) => p.path), [
    "src/a.ts",
    "added file.ts",
    "gone.ts",
    "new.ts",
    "both.ts",
    "notes.md",
  ]);
  const text = gitStatusText(s);
  assert(text.includes("Branch: main (ahead 2, behind 1)"), text);
  assert(
    text.includes(
      "Changes: 6 (1 modified, 1 added, 1 deleted, 1 renamed, 1 conflicted, 1 untracked)",
    ),
  );
});

Deno.test("gitStatusText() lists 64 paths whole; the 65th becomes a count", () => {
  const at = gitStatusText(
    parseGitStatus([...HEAD, ...untracked(GIT_STATUS_PATHS_MAX)].join("\n")),
  );
  assertEquals(at.split("\n").filter((l) => l.startsWith("?")).length, GIT_STATUS_PATHS_MAX);
  assert(!at.includes("more path"));
  const past = gitStatusText(
    parseGitStatus([...HEAD, ...untracked(GIT_STATUS_PATHS_MAX + 1)].join("\n")),
  );
  assertEquals(past.split("\n").filter((l) => l.startsWith("?")).length, GIT_STATUS_PATHS_MAX);
  assert(past.endsWith("… and 1 more path not listed"), past);
});

Deno.test("an output of exactly 16 KiB is read whole; past it the counts are lower bounds", () => {
  const body = (n: number) => {
    const lines = [...HEAD];
    let s = lines.join("\n") + "\n";
    let i = 0;
    while (new TextEncoder().encode(s).length < n) s += `? f${i++}.txt\n`;
    return s.slice(0, n);
  };
  const exact = body(GIT_STATUS_OUTPUT_MAX_BYTES);
  assertEquals(parseGitStatus(exact).cut, false);
  assert(!gitStatusText(parseGitStatus(exact)).includes("at least"));
  const over = body(GIT_STATUS_OUTPUT_MAX_BYTES + 100);
  const s = parseGitStatus(over);
  assertEquals(s.cut, true);
  assert(gitStatusText(s).includes("Changes: at least "));
});

Deno.test("10,000 changes stay a short section: 64 paths and a count", () => {
  const raw = [...HEAD, ...untracked(10_000)].join("\n");
  const s = parseGitStatus(raw);
  assert(s.cut, "10,000 lines pass the 16 KiB bound");
  const text = gitStatusText(s);
  assertEquals(text.split("\n").filter((l) => l.startsWith("?")).length, GIT_STATUS_PATHS_MAX);
  assert(new TextEncoder().encode(text).length < 4096, String(text.length));
  assert(/… and at least \d+ more paths not listed$/.test(text), text.slice(-80));
});
