/** The import-graph check (tools/check/imports.ts, docs/layers.md) over the real tree and cases. */
import { assertEquals } from "../helpers/assert.ts";
import { checkGraph, checkTree, cycles, importsOf } from "../../tools/check/imports.ts";

const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

Deno.test("the product tree has no upward import, no cycle and no test hook", () => {
  assertEquals(checkTree(ROOT).map((f) => `${f.kind}: ${f.message}`), []);
});

Deno.test("the check refuses an upward import, a ui import of the server, and a cycle", () => {
  const cases: [string, Record<string, string[]>, string[]][] = [
    ["store → domain", { "runtime/store/a.ts": ["runtime/runs/b.ts"], "runtime/runs/b.ts": [] }, [
      "upward",
    ]],
    [
      "protocol → sandbox",
      { "runtime/protocol/a.ts": ["sandbox/libc.ts"], "sandbox/libc.ts": [] },
      [
        "upward",
      ],
    ],
    ["sandbox → linuxfs", { "sandbox/a.ts": ["linuxfs/b.ts"], "linuxfs/b.ts": [] }, ["upward"]],
    ["domain → http", { "runtime/runs/a.ts": ["runtime/http/b.ts"], "runtime/http/b.ts": [] }, [
      "upward",
    ]],
    ["http → composition", { "runtime/http/a.ts": ["runtime/app.ts"], "runtime/app.ts": [] }, [
      "upward",
    ]],
    ["ui → domain", { "ui/a.ts": ["runtime/runs/b.ts"], "runtime/runs/b.ts": [] }, ["ui"]],
    ["a new top-level folder", { "lib/a.ts": [] }, ["unlayered"]],
    ["domain → store is fine", {
      "runtime/runs/a.ts": ["runtime/store/b.ts"],
      "runtime/store/b.ts": [],
    }, []],
    ["ui → protocol is fine", {
      "ui/a.ts": ["runtime/protocol/api.ts"],
      "runtime/protocol/api.ts": [],
    }, []],
    ["linuxfs → sandbox libc is fine", {
      "linuxfs/a.ts": ["sandbox/libc.ts"],
      "sandbox/libc.ts": [],
    }, []],
    [
      "a cycle between two domain modules",
      { "runtime/runs/a.ts": ["runtime/runs/b.ts"], "runtime/runs/b.ts": ["runtime/runs/a.ts"] },
      ["cycle"],
    ],
  ];
  for (const [name, graph, kinds] of cases) {
    const found = checkGraph(new Map(Object.entries(graph))).map((f) => f.kind);
    assertEquals(found, kinds, name);
  }
});

Deno.test("cycles are reported as closed paths", () => {
  const g = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]);
  assertEquals(cycles(g), [["a", "b", "c", "a"]]);
});

Deno.test("importsOf reads static, type-only, re-export and dynamic imports, not comments", () => {
  const src = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b.ts";',
    'export { c } from "./c.ts";',
    'const d = await import("./d.ts");',
    '// import { e } from "./e.ts";',
    '/* import { f } from "./f.ts"; */',
    'import { z } from "zod";',
  ].join("\n");
  assertEquals(importsOf(src), ["./a.ts", "../b.ts", "./c.ts", "./d.ts"]);
});

Deno.test("a test hook variable in the product tree is a finding", () => {
  const root = Deno.makeTempDirSync();
  try {
    for (const d of ["runtime", "sandbox", "linuxfs", "migrations", "ui"]) {
      Deno.mkdirSync(`${root}/${d}`);
    }
    Deno.writeTextFileSync(`${root}/main.ts`, "");
    Deno.writeTextFileSync(
      `${root}/runtime/limits.ts`,
      `Deno.env.get("${["AGENT", "BUILDER", "TEST", "X"].join("_")}");\n`,
    );
    assertEquals(checkTree(root).map((f) => f.kind), ["test_hook"]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
