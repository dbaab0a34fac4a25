/**
 * [UI-6] error states say what happened: every code the UI has a sentence for
 * is a real fixed code (or the browser's own `network_error`), and a code
 * without a sentence shows the server's fixed public message from the error
 * envelope instead of a generic "Something went wrong."
 */
import { ApiError } from "../../ui/api.ts";
import { errorCode, errorMessage } from "../../ui/lib/endpoints.ts";
import { DESCRIBED_CODES, describeError, hasDescription } from "../../ui/lib/messages.ts";
import { ERROR_CODES, errorBody } from "../../runtime/errors.ts";
import { assertEquals } from "../helpers/assert.ts";

const UI_ONLY = new Set(["network_error"]);

Deno.test("a code without a UI sentence shows the server's fixed message for it", () => {
  const err = new ApiError("journal_corrupt", 500, errorBody("journal_corrupt"), null);
  assertEquals(hasDescription("journal_corrupt"), false);
  assertEquals(errorCode(err), "journal_corrupt");
  assertEquals(
    describeError(errorCode(err), errorMessage(err)),
    "The run journal failed validation.",
  );
});

Deno.test("a code with a UI sentence keeps it, and no envelope falls back to a generic sentence", () => {
  const err = new ApiError("conversation_busy", 409, errorBody("conversation_busy"), null);
  assertEquals(
    describeError(errorCode(err), errorMessage(err)),
    "This conversation already has a running answer.",
  );
  assertEquals(errorMessage(new TypeError("Failed to fetch")), null);
  assertEquals(errorMessage(new ApiError("http_502", 502, "<html>bad gateway</html>", null)), null);
  assertEquals(describeError("http_502", null), "Something went wrong.");
});

Deno.test("the codes a conversation can meet all have a plain sentence", () => {
  for (
    const code of [
      "agent_not_found",
      "conversation_not_found",
      "run_not_found",
      "permission_not_found",
      "approval_stale",
      "invalid_session_cursor",
      "storage_full",
      "too_many_connections",
      "shutting_down",
      "internal_error",
    ]
  ) assertEquals(hasDescription(code), true, code);
});

Deno.test("every code the UI describes is one of the server's fixed codes", () => {
  const known = new Set<string>(ERROR_CODES);
  const stray = DESCRIBED_CODES.filter((c) => !known.has(c) && !UI_ONLY.has(c));
  assertEquals(stray, []);
});
