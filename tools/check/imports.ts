/**
 * The import-graph check (docs/layers.md): builds the graph of every product
 * module (main.ts, runtime/, sandbox/, linuxfs/, migrations/, ui/) from its
 * static and dynamic relative imports, and fails on
 *
 * - an import from a lower layer to a higher one (the layer table below),
 * - a `ui/` module importing anything of the server but runtime/protocol/ and
 *   the base modules,
 * - any cycle between modules (reported with its path),
 * - a test hook in the product: the test-hook variable prefix anywhere in it
 *   (test hooks are armed only by tests/helpers/test_server_entry.ts).
 *
 * Usage: `deno run --allow-read tools/check/imports.ts [root]` — prints one line
 * per finding and exits 1 when there is any. tests/unit/import_graph_test.ts runs it.
 */

/** Layers from low (0) to high; a module may import its own layer or a lower one. */
export const LAYERS: readonly { name: string; rank: number; match: (p: string) => boolean }[] = [
  {
    name: "base",
    rank: 0,
    match: (p) =>
      [
        "runtime/errors.ts",
        "runtime/limits.ts",
        "runtime/usage_error.ts",
        "runtime/argv.ts",
        "runtime/log.ts",
        "runtime/path_safety.ts",
        "runtime/display_name.ts",
        "runtime/heap_trim.ts",
        "runtime/loop_turns.ts",
        "runtime/zod_jitless.ts",
      ].includes(p),
  },
  { name: "protocol", rank: 1, match: (p) => p.startsWith("runtime/protocol/") },
  {
    name: "sandbox",
    rank: 2,
    match: (p) => p.startsWith("sandbox/") && p !== "sandbox/worker_bundle_entry.ts",
  },
  { name: "linuxfs", rank: 3, match: (p) => p.startsWith("linuxfs/") },
  { name: "kernel", rank: 3, match: (p) => p.startsWith("runtime/kernel/") },
  // The runner's runtime-compile body: loaded inside the confined runner by
  // sandbox/runner_entry.ts, it imports only base (like the kernel for the Worker).
  // Likewise the document extractors of the `extract` job [LC-4].
  {
    name: "runner_body",
    rank: 1,
    match: (p) =>
      p === "runtime/exec/compile_check.ts" || p === "runtime/documents/extract_core.ts" ||
      p === "runtime/documents/zip_limits.ts",
  },
  // Numbered SQL for the store: data the store applies, beside it.
  { name: "migrations", rank: 4, match: (p) => p.startsWith("migrations/") },
  { name: "store", rank: 4, match: (p) => p.startsWith("runtime/store/") },
  { name: "home", rank: 4, match: (p) => p === "runtime/home.ts" || p === "runtime/instance.ts" },
  {
    name: "domain",
    rank: 5,
    match: (p) =>
      /^runtime\/[a-z_]+\//.test(p) &&
      !/^runtime\/(http|cli|store|protocol|kernel)\//.test(p),
  },
  { name: "http", rank: 6, match: (p) => p.startsWith("runtime/http/") },
  {
    name: "composition",
    rank: 7,
    match: (p) => p === "runtime/app.ts" || p === "runtime/app_ports.ts",
  },
  // sandbox/worker_bundle_entry.ts is the pre-bundled Worker's main.ts (`main.ts worker`
  // alone): an entry point that loads the kernel's Worker body, like main.ts does.
  {
    name: "entry",
    rank: 8,
    match: (p) =>
      p === "main.ts" || p.startsWith("runtime/cli/") || p === "sandbox/worker_bundle_entry.ts",
  },
];

/** Same-rank layers that must not import each other (only the named pair is allowed). */
const SAME_RANK_ALLOWED: ReadonlySet<string> = new Set([
  "migrations->store",
  "store->migrations",
  "home->store",
]);

/** What ui/ may import from outside ui/. */
function uiMayImport(p: string): boolean {
  return p.startsWith("ui/") || p.startsWith("runtime/protocol/") ||
    ["runtime/errors.ts", "runtime/limits.ts"].includes(p) || p.startsWith("dist/");
}

export interface Finding {
  kind: "upward" | "ui" | "cycle" | "unlayered" | "test_hook";
  message: string;
}

const IMPORT_RE =
  /(?:^|[^\w.$])(?:import|export)\s*(?:type\s+)?(?:[^'"`;]*?\sfrom\s*)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** Relative import specifiers of a module's source (comments stripped first). */
export function importsOf(source: string): string[] {
  const code = source
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const out: string[] = [];
  for (const m of code.matchAll(IMPORT_RE)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith("./") || spec.startsWith("../")) out.push(spec);
  }
  return out;
}

function layerOf(p: string) {
  return LAYERS.find((l) => l.match(p)) ?? null;
}

function normalize(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const seg of spec.split("/")) {
    if (seg === "." || seg === "") continue;
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  return parts.join("/");
}

/** Checks a graph given as module → imported modules (paths relative to the root). */
export function checkGraph(graph: ReadonlyMap<string, readonly string[]>): Finding[] {
  const findings: Finding[] = [];
  for (const [from, targets] of graph) {
    if (from.startsWith("ui/")) {
      for (const to of targets) {
        if (!uiMayImport(to)) {
          findings.push({
            kind: "ui",
            message: `${from} imports ${to} (ui/ may import only runtime/protocol/ and base)`,
          });
        }
      }
      continue;
    }
    const lf = layerOf(from);
    if (lf === null) {
      findings.push({ kind: "unlayered", message: `${from} is in no layer (docs/layers.md)` });
      continue;
    }
    for (const to of targets) {
      const lt = layerOf(to);
      if (lt === null) continue; // reported for `to` itself when it is a product module
      const upward = lt.rank > lf.rank ||
        (lt.rank === lf.rank && lt.name !== lf.name &&
          !SAME_RANK_ALLOWED.has(`${lf.name}->${lt.name}`));
      if (upward) {
        findings.push({
          kind: "upward",
          message: `${from} (${lf.name}) imports ${to} (${lt.name})`,
        });
      }
    }
  }
  for (const cycle of cycles(graph)) {
    findings.push({ kind: "cycle", message: `cycle: ${cycle.join(" → ")}` });
  }
  return findings;
}

/** Every elementary cycle found by a DFS (one per back edge), as a closed path. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (n: string) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (!graph.has(m)) continue;
      const s = state.get(m);
      if (s === 1) found.push([...stack.slice(stack.indexOf(m)), m]);
      else if (s === undefined) visit(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);
  return found;
}

const PRODUCT_DIRS = ["runtime", "sandbox", "linuxfs", "migrations", "ui"];
// Spelled in parts so that this file itself never matches a grep for the prefix.
const TEST_HOOK_PREFIX = ["AGENT", "BUILDER", "TEST", ""].join("_");

function* walk(root: string, dir: string): Generator<string> {
  for (
    const e of [...Deno.readDirSync(`${root}/${dir}`)].sort((a, b) => a.name < b.name ? -1 : 1)
  ) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory) yield* walk(root, rel);
    else if (e.isFile && rel.endsWith(".ts")) yield rel;
  }
}

/** Reads the product tree under `root` and returns the findings. */
export function checkTree(root: string): Finding[] {
  const files = ["main.ts", ...PRODUCT_DIRS.flatMap((d) => [...walk(root, d)])];
  const graph = new Map<string, string[]>();
  const findings: Finding[] = [];
  for (const f of files) {
    const src = Deno.readTextFileSync(`${root}/${f}`);
    if (src.includes(TEST_HOOK_PREFIX)) {
      findings.push({
        kind: "test_hook",
        message: `${f} names a test hook variable (the test entry's prefix)`,
      });
    }
    graph.set(f, importsOf(src).map((s) => normalize(f, s)).filter((t) => t.endsWith(".ts")));
  }
  return [...findings, ...checkGraph(graph)];
}

if (import.meta.main) {
  const root = Deno.args[0] ?? new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
  const findings = checkTree(root);
  for (const f of findings) console.log(`${f.kind}: ${f.message}`);
  if (findings.length > 0) {
    console.log(`import graph: ${findings.length} finding(s)`);
    Deno.exit(1);
  }
  console.log("import graph: no upward import, no cycle");
}
