/**
 * Plain-language text for the fixed error codes the UI shows [UI-6]. The code
 * itself is always shown next to it; unknown codes get a generic sentence.
 */

const TEXT: Record<string, string> = {
  unauthorized: "Your session ended. Please log in again.",
  csrf_failed: "Your session token is stale. Reload the page.",
  conversation_busy: "This conversation already has a running answer.",
  runs_busy: "Too many runs are active. Try again in a moment.",
  model_unavailable: "The model is unavailable. Check the Ollama connection.",
  model_busy: "The model is busy. Try again shortly.",
  agent_protected: "The system Agent cannot be changed.",
  agent_busy: "The Agent is not accepting new work right now.",
  agent_limit: "The Agent limit is reached.",
  conversation_limit: "This Agent has the maximum number of conversations.",
  conversation_no_head: "There is no completed answer to branch from yet.",
  message_too_large: "The message is longer than 8192 bytes.",
  command_invalid: "That command input is not valid.",
  command_unknown: "Unknown command. Type / to see the list.",
  model_not_found: "No model with that id in the catalog.",
  run_not_active: "The run already finished.",
  rate_limited: "Too many attempts. Wait a minute and try again.",
  schema_violation: "The request was refused as malformed.",
  not_found: "Not found.",
  network_error: "The server cannot be reached.",
};

export function describeError(code: string): string {
  return TEXT[code] ?? "Something went wrong.";
}
