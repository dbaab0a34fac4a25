/**
 * [#18] Payloads are shown for people: multi-line strings as their lines, JSON
 * held in a string laid out instead of escaped twice, keys unquoted.
 */
import { assertEquals } from "../helpers/assert.ts";
import { prettyPayload } from "../../ui/lib/pretty.ts";

Deno.test("a tool result holding JSON with a multi-line text reads without escapes", () => {
  const result = JSON.stringify({ path: "a.md", text: "# Title\n\nline two\n", truncated: "none" });
  assertEquals(
    prettyPayload({ result, elapsed_ms: 3 }),
    [
      "result:",
      '  path: "a.md"',
      "  text: |",
      "      # Title",
      "      ",
      "      line two",
      '  truncated: "none"',
      "elapsed_ms: 3",
    ].join("\n"),
  );
});

Deno.test("arrays, empty containers, plain strings and non-JSON braces", () => {
  assertEquals(
    prettyPayload({ ids: ["a", 1], none: [], o: {}, s: "{not json}" }),
    [
      "ids:",
      '  - "a"',
      "  - 1",
      "none: []",
      "o: {}",
      's: "{not json}"',
    ].join("\n"),
  );
});
