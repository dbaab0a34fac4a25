// word-stats: an example skill [LC-3]. Reads its arguments as JSON on stdin,
// answers on stdout. Runs with no network, no workspace and its own files
// read-only; it needs nothing else.
const input = JSON.parse(await new Response(Deno.stdin.readable).text()) as {
  text: string;
  top?: number;
};
const text = input.text;
const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
const counts = new Map<string, number>();
for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
const top = [...counts.entries()]
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  .slice(0, input.top ?? 5);
console.log(`lines: ${text === "" ? 0 : text.split("\n").length}`);
console.log(`words: ${words.length}`);
console.log(`characters: ${[...text].length}`);
console.log(`most frequent: ${top.map(([w, n]) => `${w} (${n})`).join(", ") || "none"}`);
