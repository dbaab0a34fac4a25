/**
 * A small syntax highlighter for the workspace file viewer [#18]: splits text
 * into tokens (comment, string, number, keyword, plain) by the file's
 * extension. Tokens become text nodes inside spans — never markup — so any
 * file content is safe to show. Pure; bounded by the caller's file size.
 */

export type TokenKind = "comment" | "string" | "number" | "keyword" | "heading" | "plain";
export interface Token {
  kind: TokenKind;
  text: string;
}

const KEYWORDS: Record<string, string> = {
  ts:
    "abstract as async await break case catch class const continue default delete do else enum export extends false finally for from function if implements import in instanceof interface let new null of return static super switch this throw true try type typeof undefined var void while yield",
  py:
    "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield",
  sh: "if then else elif fi for while do done case esac function in return export local",
  rs:
    "as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while",
  go:
    "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var",
  json: "true false null",
};
const LANG: Record<string, string> = {
  ts: "ts",
  tsx: "ts",
  js: "ts",
  jsx: "ts",
  mjs: "ts",
  py: "py",
  sh: "sh",
  bash: "sh",
  rs: "rs",
  go: "go",
  json: "json",
  md: "md",
};

/** The highlighting language of a file name, or null (plain text). */
export function languageOf(name: string): string | null {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? "";
  return LANG[ext] ?? null;
}

export function highlight(text: string, lang: string | null): Token[] {
  if (lang === null) return [{ kind: "plain", text }];
  if (lang === "md") {
    return text.split(/(?<=\n)/).map((l) => ({
      kind: /^#{1,6}\s/.test(l) ? "heading" as const : "plain" as const,
      text: l,
    }));
  }
  const comment = lang === "py" || lang === "sh"
    ? String.raw`#[^\n]*`
    : String.raw`\/\/[^\n]*|\/\*[\s\S]*?\*\/`;
  const re = new RegExp(
    `(${comment})|("(?:[^"\\\\\\n]|\\\\.)*"|'(?:[^'\\\\\\n]|\\\\.)*'|\`(?:[^\`\\\\]|\\\\.)*\`)|(\\b\\d[\\d_.]*\\b)|([A-Za-z_$][\\w$]*)`,
    "g",
  );
  const words = new Set((KEYWORDS[lang] ?? "").split(" "));
  const out: Token[] = [];
  let last = 0;
  const push = (kind: TokenKind, t: string) => {
    if (t === "") return;
    const prev = out.at(-1);
    if (prev && prev.kind === kind) prev.text += t;
    else out.push({ kind, text: t });
  };
  for (const m of text.matchAll(re)) {
    push("plain", text.slice(last, m.index));
    const kind: TokenKind = m[1] !== undefined
      ? "comment"
      : m[2] !== undefined
      ? "string"
      : m[3] !== undefined
      ? "number"
      : words.has(m[4]!)
      ? "keyword"
      : "plain";
    push(kind, m[0]);
    last = m.index! + m[0].length;
  }
  push("plain", text.slice(last));
  return out;
}
