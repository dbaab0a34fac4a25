/**
 * The skill card's reading of a canonical skill result [LC-3, UI-10]: the
 * fields it shows, and null (→ the raw text as an error) for anything else.
 */
import { assertEquals } from "../helpers/assert.ts";
import { parseSkillResult } from "../../ui/SkillCard.ts";

Deno.test("a canonical skill result is read field by field; an error or garbage is not a skill result", () => {
  const r = parseSkillResult(JSON.stringify({
    skill: "x",
    trust: "untrusted",
    exit_code: 2,
    signal: null,
    duration_ms: 12,
    answer: "hi\n",
    answer_bytes: 3,
    answer_truncated: false,
    stderr: "warn",
    output_files: [{ path: "a.txt", size: 1 }, { path: 7, size: "x" }],
    output_files_total: 2,
  }));
  assertEquals(r, {
    answer: "hi\n",
    answer_truncated: false,
    answer_bytes: 3,
    exit_code: 2,
    signal: null,
    duration_ms: 12,
    stderr: "warn",
    output_files: [{ path: "a.txt", size: 1 }],
    output_files_total: 2,
  });
  assertEquals(parseSkillResult('{"error":"skill_timeout"}'), null);
  assertEquals(parseSkillResult("not json"), null);
  assertEquals(parseSkillResult(null), null);
});
