/**
 * The `runtime-compile` checker [EX-1, TL-7]: the TypeScript compiler from
 * npm (`typescript`, JS API — bundled with the executable, not the Deno CLI),
 * run INSIDE the runner over a read-only view of the workspace.
 *
 * What it enforces:
 *  - `.js`/`.mjs`: syntax only; `.ts`/`.tsx`: syntax and types;
 *  - the program is the file and its RELATIVE imports inside the root (other
 *    specifiers — `npm:`, `jsr:`, bare packages, URLs — are not followed and
 *    their "cannot find module" diagnostics are dropped), at most
 *    COMPILE_FILES_MAX workspace files, else `compile_too_many_files`;
 *  - Deno's and Node's globals are declared `any` (the check is about the
 *    file's own code, not about a runtime's type library);
 *  - diagnostics as `path:line:col TSxxxx message` with workspace-relative
 *    paths, one per line, cut at a line boundary to `maxBytes` with a final
 *    `… N more diagnostics` line.
 */
import { COMPILE_FILES_MAX } from "../limits.ts";

/** Extensions runtime-compile accepts. */
export const COMPILE_EXTENSIONS = [".ts", ".tsx", ".js", ".mjs"];

const AMBIENT = "/__agent_builder_ambient__.d.ts";
const AMBIENT_TEXT = [
  "declare const Deno: any;",
  "declare const process: any;",
  "declare const Buffer: any;",
  "declare function require(id: string): any;",
  "declare const module: any;",
  "declare const __dirname: string;",
  "declare const __filename: string;",
  "declare const console: any;",
].join("\n");

/**
 * The files a relative import resolves to, in the order tried: the one rule both
 * the Control Plane (collecting the files it hands the runner) and the runner's
 * compile follow, so the two never disagree on which file an import means.
 */
export function moduleCandidates(target: string): string[] {
  return [
    target,
    target.replace(/\.js$/, ".ts"),
    target.replace(/\.jsx$/, ".tsx"),
    `${target}.ts`,
    `${target}.tsx`,
    `${target}/index.ts`,
    `${target}/index.js`,
  ];
}

export type CompileOutcome =
  | { ok: true; diagnostics: string; count: number; files: number }
  | { ok: false; code: "compile_too_many_files" | "compile_unsupported_file" | "path_not_found" };

const isRelative = (s: string) => s.startsWith("./") || s.startsWith("../");

/**
 * Checks `rootRel` (relative to `root`, the read-only workspace view).
 * `ts` is the TypeScript module (imported by the caller, so this file stays cheap to load).
 */
export function checkWorkspaceFile(
  // deno-lint-ignore no-explicit-any
  ts: any,
  root: string,
  rootRel: string,
  maxBytes: number,
): CompileOutcome {
  const ext = COMPILE_EXTENSIONS.find((e) => rootRel.endsWith(e));
  if (ext === undefined) return { ok: false, code: "compile_unsupported_file" };
  const base = root.replace(/\/+$/, "");
  const rootFile = `${base}/${rootRel}`;
  const inRoot = (p: string) => p.startsWith(`${base}/`);
  const libDir = ts.getDirectoryPath(ts.getDefaultLibFilePath({}));
  const readText = (p: string): string | undefined => {
    try {
      return Deno.readTextFileSync(p);
    } catch {
      return undefined;
    }
  };
  const isFile = (p: string) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  };
  if (!isFile(rootFile)) return { ok: false, code: "path_not_found" };
  const syntaxOnly = ext === ".js" || ext === ".mjs";
  const options = {
    noEmit: true,
    allowJs: true,
    checkJs: false,
    strict: true,
    target: ts.ScriptTarget.ESNext,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    jsx: ts.JsxEmit.Preserve,
    lib: ["lib.esnext.d.ts"],
    skipLibCheck: true,
    types: [],
    noResolve: false,
  };
  const userFiles = new Set<string>();
  let tooMany = false;
  const host = ts.createCompilerHost(options, true);
  host.getCurrentDirectory = () => base;
  host.fileExists = (p: string) =>
    p === AMBIENT || p.startsWith(libDir) || (inRoot(p) && isFile(p));
  host.readFile = (p: string) => {
    if (p === AMBIENT) return AMBIENT_TEXT;
    if (p.startsWith(libDir) || inRoot(p)) return readText(p);
    return undefined;
  };
  host.getSourceFile = (p: string, lang: unknown) => {
    const text = host.readFile(p);
    if (text === undefined) return undefined;
    if (inRoot(p)) {
      userFiles.add(p);
      if (userFiles.size > COMPILE_FILES_MAX) tooMany = true;
    }
    return ts.createSourceFile(p, text, lang, true);
  };
  host.directoryExists = (d: string) => d.startsWith(libDir) || d === base || inRoot(d);
  host.getDirectories = () => [];
  // Only relative specifiers inside the root are followed.
  host.resolveModuleNameLiterals = (
    literals: Array<{ text: string }>,
    containingFile: string,
  ) =>
    literals.map((lit) => {
      if (!isRelative(lit.text)) return { resolvedModule: undefined };
      const dir = ts.getDirectoryPath(containingFile);
      const target = ts.getNormalizedAbsolutePath(lit.text, dir);
      const hit = moduleCandidates(target).find((c) => inRoot(c) && isFile(c));
      if (hit === undefined) return { resolvedModule: undefined };
      return {
        resolvedModule: {
          resolvedFileName: hit,
          extension: ts.extensionFromPath(hit),
          isExternalLibraryImport: false,
        },
      };
    });
  const program = ts.createProgram({
    rootNames: syntaxOnly ? [rootFile] : [rootFile, AMBIENT],
    options: syntaxOnly ? { ...options, noResolve: true, noLib: true } : options,
    host,
  });
  const sf = program.getSourceFile(rootFile);
  if (tooMany) return { ok: false, code: "compile_too_many_files" };
  const diags = syntaxOnly
    ? [...program.getSyntacticDiagnostics(sf)]
    : [...program.getSyntacticDiagnostics(), ...program.getSemanticDiagnostics()];
  if (tooMany) return { ok: false, code: "compile_too_many_files" };
  const entries: Array<{ key: [number, string, number, number]; text: string }> = [];
  for (const d of diags) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, " ").replace(/\s+/g, " ");
    // Unfollowed non-relative imports are not the file's error.
    if ((d.code === 2307 || d.code === 2792) && !/['"]\.\.?\//.test(message)) continue;
    if (d.file === undefined) {
      entries.push({ key: [2, "", 0, 0], text: `TS${d.code} ${message}` });
      continue;
    }
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
    const rel = inRoot(d.file.fileName) ? d.file.fileName.slice(base.length + 1) : d.file.fileName;
    entries.push({
      key: [rel === rootRel ? 0 : 1, rel, line, character],
      text: `${rel}:${line + 1}:${character + 1} TS${d.code} ${message}`,
    });
  }
  // The checked file first, then its imports by path, each by position.
  entries.sort((a, b) => {
    for (let i = 0; i < 4; i++) {
      if (a.key[i] < b.key[i]) return -1;
      if (a.key[i] > b.key[i]) return 1;
    }
    return 0;
  });
  const lines = entries.map((e) => e.text);
  return {
    ok: true,
    diagnostics: boundLines(lines, maxBytes),
    count: lines.length,
    files: userFiles.size,
  };
}

/** Whole lines up to `maxBytes`, then a count of the rest. */
export function boundLines(lines: readonly string[], maxBytes: number): string {
  const enc = new TextEncoder();
  let out = "";
  let used = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = `${lines[i]}\n`;
    const n = enc.encode(line).length;
    const marker = `… ${lines.length - i} more diagnostics\n`;
    if (used + n + (i < lines.length - 1 ? enc.encode(marker).length : 0) > maxBytes) {
      return out + marker;
    }
    out += line;
    used += n;
  }
  return out;
}
