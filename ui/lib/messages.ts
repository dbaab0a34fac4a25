/**
 * Plain-language text for the fixed error codes the UI shows [UI-6]. The code
 * itself is always shown next to it; a code without a sentence here shows the
 * server's fixed public message for it [GW-6] (fixed text, never request data),
 * and only when there is none a generic sentence.
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
  agent_unavailable: "This Agent is unavailable: its files failed a start-up check. Delete it, " +
    "or repair its files and restart the server.",
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
  agent_not_found: "That Agent no longer exists. Pick another one.",
  conversation_not_found: "That conversation no longer exists.",
  run_not_found: "That run no longer exists.",
  permission_not_found: "That approval is no longer pending.",
  approval_stale: "That approval no longer matches its run.",
  invalid_session_cursor: "The history changed meanwhile. Reload the conversation.",
  storage_full: "The storage bound is reached. Delete old conversations or Agents.",
  too_many_connections: "The server is busy. Try again in a moment.",
  shutting_down: "The server is shutting down.",
  internal_error: "The server hit an internal error.",
  // Why a Turn ended without an answer (shown in its terminal summary).
  model_first_frame_timeout: "The model did not start answering in time.",
  model_stream_idle_timeout: "The model stopped sending in the middle of its answer.",
  model_turn_deadline: "The answer took longer than a turn may take.",
  model_transport_timeout: "The connection to the model timed out.",
  model_temporarily_unhealthy: "The model is temporarily unhealthy. Try again shortly.",
  model_protocol_error: "The model's reply could not be understood.",
  model_provider_error: "The model reported an error while answering.",
  model_stream_too_large: "The model's answer was larger than allowed.",
  model_context_limit: "The conversation no longer fits the model's context window.",
  model_tool_loop: "The model kept calling tools without finishing.",
  model_capability_missing: "This model cannot do what the Agent needs (for example tools).",
  sandbox_unavailable: "The sandbox for running the Agent is not available on this machine.",
  sandbox_attestation_failed: "The Agent's sandbox could not be verified, so it did not run.",
  worker_protocol_error: "The Agent's worker broke protocol and was stopped.",
  worker_crashed: "The Agent's worker stopped unexpectedly.",
  worker_resource_limit: "The Agent's worker hit a resource limit.",
  journal_unavailable: "The run's journal could not be written.",
  run_event_limit: "The run produced more events than allowed.",
  run_cancelled: "The run was stopped.",
  run_interrupted: "The run was interrupted (for example by a restart).",
  // attachments [LC-4, UI-12]
  attachment_name_invalid: "The file name could not be read.",
  attachments_dir_unsafe: "The workspace's attachments folder is not a plain folder; fix it first.",
  attachment_name_taken: "Too many attachments share this name; rename the file.",
};

/** Every code with a specific sentence (for the consistency test). */
export const DESCRIBED_CODES: readonly string[] = Object.keys(TEXT);

/** Whether `describeError` has a specific sentence for `code`. */
export function hasDescription(code: string): boolean {
  return Object.hasOwn(TEXT, code);
}

/** The sentence for `code`; else `serverMessage` (the envelope's fixed text); else a generic one. */
export function describeError(code: string, serverMessage: string | null = null): string {
  if (Object.hasOwn(TEXT, code)) return TEXT[code];
  return serverMessage ?? "Something went wrong.";
}
