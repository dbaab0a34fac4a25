// csv-table: an example skill [LC-3]. Parses CSV from its JSON arguments
// (stdin), prints a Markdown table (stdout is the answer) and also writes it
// to its output directory (SKILL_OUTPUT_DIR, the one place it may write): the
// result lists that file's name and size; the directory is discarded after
// the call.
const input = JSON.parse(await new Response(Deno.stdin.readable).text()) as {
  csv: string;
  align_numbers?: boolean;
};

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"', i++);
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") (row.push(cell), cell = "");
    else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length > 0) (row.push(cell), rows.push(row));
  return rows.filter((r) => r.some((x) => x.trim() !== ""));
}

const rows = parseCsv(input.csv);
if (rows.length === 0) {
  console.log("The CSV is empty.");
  Deno.exit(0);
}
const width = Math.max(...rows.map((r) => r.length));
const cells = rows.map((r) => Array.from({ length: width }, (_, i) => (r[i] ?? "").trim()));
const esc = (s: string) => s.replaceAll("|", "\\|");
const numeric = Array.from(
  { length: width },
  (_, i) => cells.slice(1).every((r) => r[i] === "" || /^-?\d+(\.\d+)?$/.test(r[i])),
);
const rule = numeric.map((n) => (input.align_numbers && n ? "---:" : "---"));
const lines = [
  `| ${cells[0].map(esc).join(" | ")} |`,
  `| ${rule.join(" | ")} |`,
  ...cells.slice(1).map((r) => `| ${r.map(esc).join(" | ")} |`),
];
const table = lines.join("\n") + "\n";
await Deno.writeTextFile(`${Deno.env.get("SKILL_OUTPUT_DIR")}/table.md`, table);
console.log(table);
console.log(`${cells.length - 1} rows × ${width} columns`);
