/**
 * The product's fixed error codes, their HTTP status, fixed public message and
 * retryability, in one table [GW-6]. Nothing else maps codes to statuses.
 *
 * SECURITY: messages are fixed text. Never interpolate request data, paths,
 * secrets or exception text into an AppError's public message.
 */

interface ErrorInfo {
  status: number;
  message: string;
  retryable?: boolean;
}

const TABLE = {
  // generic HTTP / gateway
  not_found: { status: 404, message: "Not found." },
  method_not_allowed: { status: 405, message: "Method not allowed." },
  unauthorized: { status: 401, message: "Login required." },
  invalid_token: { status: 401, message: "The token is not valid." },
  csrf_failed: { status: 403, message: "Missing or invalid CSRF token." },
  origin_forbidden: { status: 403, message: "Cross-origin request refused." },
  host_forbidden: { status: 403, message: "Host not allowed." },
  connection_forbidden: { status: 403, message: "Connect through the server's listener." },
  body_too_large: { status: 413, message: "Request body too large." },
  headers_too_large: { status: 431, message: "Request headers too large." },
  bad_request: { status: 400, message: "Malformed HTTP request." },
  request_timeout: { status: 408, message: "Request not received in time." },
  unsupported_media_type: { status: 415, message: "Content-Type must be application/json." },
  invalid_json: { status: 422, message: "Request body is not valid JSON." },
  schema_violation: { status: 422, message: "Request does not match the schema." },
  message_too_large: { status: 413, message: "Message exceeds 8192 UTF-8 bytes." },
  rate_limited: { status: 429, message: "Too many attempts; try again later.", retryable: true },
  too_many_connections: { status: 503, message: "Server busy.", retryable: true },
  internal_error: { status: 500, message: "Internal error." },
  shutting_down: { status: 503, message: "Server is shutting down.", retryable: true },

  // home / paths / storage
  unsafe_path: { status: 500, message: "A managed path failed its safety check." },
  invalid_id: { status: 404, message: "Not found." },
  database_too_new: { status: 500, message: "Database schema is newer than this binary." },
  database_unsafe: { status: 500, message: "Database file failed its safety check." },
  database_not_sqlite: { status: 500, message: "Database file is not an SQLite database." },
  database_corrupt: { status: 500, message: "Database file is damaged." },
  database_schema_mismatch: {
    status: 500,
    message: "Database schema does not match this binary's migrations.",
  },
  database_migration_failed: { status: 500, message: "Database migration failed." },
  storage_full: { status: 507, message: "Storage bound reached." },
  instance_locked: { status: 409, message: "Another server holds this home." },
  state_transition_missed: {
    status: 500,
    message: "A stored state change found its row missing or in another state.",
  },

  // agents / conversations
  agent_not_found: { status: 404, message: "Agent not found." },
  agent_protected: { status: 409, message: "The system Agent cannot be changed." },
  agent_busy: { status: 409, message: "The Agent is not accepting new work.", retryable: true },
  agent_limit: { status: 409, message: "Agent limit reached." },
  agent_unavailable: {
    status: 409,
    message: "The Agent is unavailable: its files failed a start-up check. Delete it or repair it.",
  },
  conversation_not_found: { status: 404, message: "Conversation not found." },
  conversation_busy: {
    status: 409,
    message: "The conversation has an active run.",
    retryable: true,
  },
  conversation_limit: { status: 409, message: "Conversation limit reached." },
  conversation_no_head: { status: 409, message: "No completed turn to continue from." },
  turn_not_found: { status: 404, message: "Turn not found in this conversation." },
  search_query_invalid: { status: 422, message: "The search query is empty, too long or invalid." },
  export_too_large: { status: 413, message: "The conversation is too large to export." },
  import_invalid: { status: 422, message: "Not a valid conversation export." },
  invalid_session_cursor: { status: 400, message: "Invalid session cursor." },
  run_not_found: { status: 404, message: "Run not found." },
  runs_busy: { status: 503, message: "Too many active runs.", retryable: true },
  run_not_active: { status: 409, message: "The run is not active." },

  // model broker [MB]
  model_unavailable: { status: 503, message: "The model is unavailable.", retryable: true },
  model_not_found: { status: 404, message: "Unknown model." },
  model_busy: { status: 503, message: "The model is busy.", retryable: true },
  model_first_frame_timeout: {
    status: 504,
    message: "The model did not start answering in time.",
    retryable: true,
  },
  model_stream_idle_timeout: {
    status: 504,
    message: "The model stream stalled.",
    retryable: true,
  },
  model_turn_deadline: { status: 504, message: "The run deadline passed.", retryable: true },
  model_transport_timeout: {
    status: 504,
    message: "The model call timed out.",
    retryable: true,
  },
  model_temporarily_unhealthy: {
    status: 503,
    message: "The model is temporarily unhealthy.",
    retryable: true,
  },
  model_protocol_error: { status: 502, message: "The model stream was malformed." },
  model_provider_error: { status: 502, message: "The model reported an error.", retryable: true },
  model_stream_too_large: { status: 502, message: "The model stream exceeded its bounds." },
  model_context_limit: { status: 413, message: "The context exceeds the model window." },
  model_tool_loop: { status: 502, message: "The model broke the tool-call protocol." },
  model_capability_missing: { status: 503, message: "The model lacks a required capability." },
  model_unknown: { status: 422, message: "Unknown or malformed model id." },
  model_name_invalid: { status: 422, message: "Not a bare model name (no registry host)." },
  pull_busy: { status: 409, message: "Another model pull is running." },
  pull_not_found: { status: 404, message: "No such pull." },
  model_in_use: { status: 409, message: "A run is using this model." },

  // worker sandbox [SB]
  sandbox_unavailable: { status: 503, message: "The worker sandbox cannot be established." },
  sandbox_attestation_failed: { status: 500, message: "Worker attestation failed." },
  worker_protocol_error: { status: 500, message: "Worker protocol error." },
  worker_crashed: { status: 500, message: "The worker exited unexpectedly." },
  worker_resource_limit: { status: 500, message: "The worker exceeded a resource bound." },
  journal_unavailable: { status: 500, message: "The run journal is unavailable." },
  journal_corrupt: { status: 500, message: "The run journal failed validation." },
  run_event_limit: { status: 500, message: "The run exceeded its event bounds." },
  run_cancelled: { status: 409, message: "The run was cancelled." },
  run_interrupted: { status: 409, message: "The run was interrupted." },
  preparation_not_found: { status: 404, message: "Preparation operation not found." },
  // /compact [CX-9]: nothing is stored on any of these
  compact_nothing_to_summarize: {
    status: 409,
    message: "There is no older history to summarize (the latest turn always stays).",
  },
  compact_summary_failed: { status: 502, message: "The model could not write the summary." },
  compact_summary_timeout: { status: 504, message: "The summary took too long." },
  compact_summary_too_large: { status: 502, message: "The summary was longer than 8 KiB." },
  compact_summary_empty: { status: 502, message: "The model returned an empty summary." },
  compaction_not_found: { status: 404, message: "Compaction not found." },
  compaction_decided: { status: 409, message: "The compaction is no longer in that state." },
  preparation_finished: { status: 409, message: "The preparation already finished." },
  preparation_cancelled: { status: 409, message: "The preparation was cancelled." },

  // tools [TL]
  tool_denied: { status: 403, message: "The tool call was denied." },
  tool_invalid_arguments: { status: 422, message: "Invalid tool arguments." },
  // [PF-2] the file-tool process died or broke its protocol during the call
  file_tool_failed: { status: 500, message: "The file tool's process failed." },
  permission_not_found: { status: 404, message: "Permission request not found." },
  // per-Agent policy [TL-9, TL-10, TL-12]
  policy_invalid: { status: 422, message: "The policy rule is not valid." },
  policy_duplicate_rule: { status: 422, message: "The policy names the same rule twice." },
  policy_too_many_rules: { status: 422, message: "The policy has too many rules." },
  policy_platform_deny: {
    status: 422,
    message: "A rule may not relax what the platform denies.",
  },
  policy_always_unavailable: {
    status: 422,
    message: "This approval offers no always-allow rule.",
  },
  permission_diff_unavailable: { status: 404, message: "No full diff is kept for this approval." },
  // runner [EX-1, EX-2, TL-7]
  exec_busy: { status: 409, message: "Too many commands are running; try again later." },
  exec_unknown_program: { status: 422, message: "The program is not available to commands." },
  bash_not_builtin: {
    status: 422,
    message: "bounded-bash runs only printf, pwd, true or false.",
  },
  bash_syntax_refused: {
    status: 422,
    message: "bounded-bash refuses shell syntax (quotes only; no pipes, redirection or expansion).",
  },
  bash_too_many_args: { status: 422, message: "bounded-bash takes at most 8 arguments." },
  compile_unsupported_file: {
    status: 422,
    message: "runtime-compile checks .ts, .tsx, .js and .mjs files only.",
  },
  compile_too_many_files: {
    status: 422,
    message: "The file and its relative imports exceed 64 files.",
  },
  // documents and attachments [LC-4]
  document_unsupported_format: {
    status: 422,
    message: "document/extract_text reads PDF, DOCX, HTML, Markdown and text files only.",
  },
  document_too_large: { status: 413, message: "The document exceeds 16 MiB." },
  document_encrypted: { status: 422, message: "The PDF is encrypted." },
  document_malformed: { status: 422, message: "The document is damaged or not of its format." },
  document_zip_too_many_entries: { status: 422, message: "The DOCX has more than 1,000 entries." },
  document_zip_too_large: { status: 422, message: "The DOCX expands beyond 64 MiB." },
  document_zip_ratio: {
    status: 422,
    message: "The DOCX compression ratio exceeds 100 (a decompression bomb).",
  },
  document_timeout: { status: 504, message: "Text extraction exceeded its time limit." },
  document_resource_limit: {
    status: 422,
    message: "Text extraction exceeded its memory limit.",
  },
  documents_disabled: { status: 403, message: "Documents are disabled for this Agent." },
  attachment_name_invalid: { status: 422, message: "X-Filename is missing or not valid." },
  attachments_dir_unsafe: {
    status: 409,
    message: "The workspace attachments directory is not a plain directory.",
  },
  attachment_name_taken: {
    status: 409,
    message: "Too many attachments share this name.",
  },
  path_invalid: { status: 422, message: "Invalid workspace path." },
  path_too_long: { status: 422, message: "Workspace path too long." },
  path_symlink: { status: 422, message: "Symbolic links are refused." },
  path_not_found: { status: 404, message: "No such workspace path." },
  path_not_directory: { status: 422, message: "A path component is not a directory." },
  path_unsafe_owner: { status: 422, message: "Path owner or mode is unsafe." },
  path_cross_device: { status: 422, message: "Path crosses a device boundary." },
  file_not_regular: { status: 422, message: "Not a regular file." },
  file_hardlinked: { status: 422, message: "File has more than one link." },
  file_sparse: { status: 422, message: "Sparse files are refused." },
  file_too_large: { status: 422, message: "File too large." },
  file_binary: { status: 422, message: "File is not text." },
  file_invalid_utf8: { status: 422, message: "File is not valid UTF-8." },
  file_changed: { status: 409, message: "File changed during the operation." },
  file_timeout: { status: 504, message: "File operation timed out." },
  file_exists: { status: 409, message: "File already exists." },
  receipt_required: { status: 409, message: "A full read receipt is required." },
  receipt_stale: { status: 409, message: "The read receipt is stale." },
  approval_stale: { status: 409, message: "The approval no longer matches the agent or run." },
  edit_no_match: { status: 422, message: "The old text was not found." },
  edit_ambiguous: { status: 422, message: "The old text matches more than once." },
  content_too_large: { status: 413, message: "Content too large." },
  pattern_invalid: { status: 422, message: "Pattern outside the supported subset." },
  search_limit: { status: 422, message: "Search bound reached." },

  // execution: command arguments, scratch copies, change sets [EX]
  exec_argv_invalid: { status: 422, message: "Invalid command argv." },
  exec_cwd_invalid: { status: 422, message: "Invalid command working directory." },
  workspace_too_large: { status: 413, message: "The workspace exceeds the scratch-copy bounds." },
  workspace_changed: {
    status: 409,
    message: "The workspace file changed since the scratch copy was synced.",
  },
  change_set_not_found: { status: 404, message: "No change set for this run or path." },
  change_set_too_large: { status: 413, message: "The change set exceeds its bounds." },
  // background Tasks [EX-6]
  task_not_found: { status: 404, message: "Task not found." },
  task_limit: {
    status: 409,
    message: "This agent already has 2 background tasks running; wait for one to finish.",
  },
  tasks_busy: {
    status: 409,
    message: "The server already runs 4 background tasks; try again later.",
    retryable: true,
  },
  task_not_active: { status: 409, message: "The task is not running." },
  task_running: {
    status: 409,
    message: "The task is still running; its change set comes at its end.",
  },

  // slash commands [SC]
  command_invalid: { status: 422, message: "Invalid command input." },
  command_unknown: { status: 404, message: "Unknown command." },

  // backup [OP]
  backup_invalid: { status: 422, message: "The backup archive is invalid." },
  backup_name_invalid: { status: 422, message: "Invalid backup name." },
  restore_refused: { status: 409, message: "Restore refused." },
  backup_exists: { status: 409, message: "A backup with this name already exists." },
  backup_too_large: { status: 413, message: "The data exceeds the backup bounds." },

  // extensions (MCP) [LC-5]
  extension_not_found: { status: 404, message: "Extension not found." },
  extension_exists: { status: 409, message: "An extension with this name already exists." },
  extension_limit: { status: 409, message: "At most 8 extensions can be configured." },
  mcp_url_invalid: { status: 422, message: "The MCP server URL is not valid." },
  mcp_scheme_refused: {
    status: 422,
    message: "MCP servers need https (plain http only for an allowlisted IP literal).",
  },
  mcp_address_refused: {
    status: 422,
    message: "The MCP server's address is private, loopback or link-local and not allowlisted.",
  },
  mcp_dns_failed: {
    status: 502,
    message: "The MCP server's name did not resolve.",
    retryable: true,
  },
  mcp_unreachable: { status: 502, message: "The MCP server is unreachable.", retryable: true },
  mcp_tls_failed: { status: 502, message: "The MCP server's TLS certificate was refused." },
  mcp_timeout: { status: 504, message: "The MCP server did not answer in time.", retryable: true },
  mcp_redirect_refused: { status: 502, message: "The MCP server answered with a redirect." },
  mcp_http_error: { status: 502, message: "The MCP server answered with an HTTP error." },
  mcp_request_too_large: { status: 413, message: "The MCP request exceeds 64 KiB." },
  mcp_response_too_large: { status: 502, message: "The MCP server's response exceeds 256 KiB." },
  mcp_protocol_error: { status: 502, message: "The MCP server's answer is not valid JSON-RPC." },
  mcp_server_error: { status: 502, message: "The MCP server answered with a JSON-RPC error." },
  mcp_tool_error: { status: 502, message: "The MCP tool reported an error." },
  mcp_tool_refused: { status: 422, message: "The MCP tool is not offered." },

  // skills [LC-3]
  skill_digest_missing: {
    status: 422,
    message: "The X-Skill-SHA256 header (64 hex digits of the archive) is required.",
  },
  skill_digest_mismatch: {
    status: 422,
    message: "The archive's SHA-256 does not match X-Skill-SHA256.",
  },
  skill_archive_too_large: { status: 413, message: "A skill archive is at most 12 KiB." },
  skill_expanded_too_large: {
    status: 422,
    message: "A skill archive's files hold at most 16 KiB together.",
  },
  skill_archive_invalid: { status: 422, message: "The skill archive is not a valid .tar.gz." },
  skill_link_refused: {
    status: 422,
    message: "A skill archive may not contain links, devices or other special entries.",
  },
  skill_member_too_large: { status: 422, message: "A file of the skill archive is too large." },
  skill_extra_file: {
    status: 422,
    message: "A skill archive holds exactly skill.json and its entry script.",
  },
  skill_manifest_invalid: { status: 422, message: "skill.json is not a valid skill manifest." },
  skill_args_unsupported: {
    status: 422,
    message: "The skill's args schema is outside the ToolSpec subset.",
  },
  skill_exists: { status: 409, message: "A skill with this name is installed; remove it first." },
  skill_limit: { status: 409, message: "At most 16 skills can be installed per Agent." },
  skill_not_found: { status: 404, message: "Skill not found." },
  skill_timeout: { status: 504, message: "The skill script did not finish in time." },
  skill_failed: { status: 502, message: "The skill script could not be run to a proven end." },
  skill_unavailable: {
    status: 503,
    message: "Skills need the product's runtime (not available in this build).",
  },
  // external runners over the Agent Client Protocol [LC-6]
  runner_unknown: { status: 422, message: "No ACP runner of that name is registered." },
  runner_start_failed: { status: 502, message: "The ACP runner could not be started." },
  runner_crashed: { status: 502, message: "The ACP runner exited unexpectedly." },
  runner_protocol_error: { status: 502, message: "The ACP runner broke the protocol." },
  runner_flood: { status: 502, message: "The ACP runner sent more updates than a Run allows." },
  runner_timeout: { status: 504, message: "The ACP runner did not answer in time." },
  runner_path_refused: { status: 403, message: "The path is outside the Agent's workspace." },
  runner_error: { status: 502, message: "The ACP runner answered the prompt with an error." },
  runner_tool_failed: { status: 502, message: "The runner reported its tool call failed." },
  runner_token_refused: {
    status: 401,
    message: "The run token is missing, expired or not this Run's.",
  },
  // subagents [LC-2]: refusals create nothing (no Conversation, no Run, no row)
  subagent_self: { status: 422, message: "An Agent cannot delegate to itself." },
  subagent_target_unavailable: {
    status: 422,
    message: "The delegate Agent does not exist, is deleted or is unavailable.",
  },
  subagent_busy: {
    status: 409,
    message: "The delegate Agent is busy with another Run.",
    retryable: true,
  },
  subagent_depth: { status: 422, message: "A delegated Run cannot delegate again." },
  subagent_limit: {
    status: 503,
    message: "Too many delegations are running; try again later.",
    retryable: true,
  },
  subagent_parent_limit: { status: 422, message: "This Run already delegated once." },
  subagent_message_too_large: {
    status: 413,
    message: "The delegation message exceeds 4096 bytes.",
  },
  subagent_mailbox_full: { status: 409, message: "The delegation's mailbox is full." },
  subagent_timeout: { status: 504, message: "The delegate did not answer within 45 s." },
  subagent_failed: { status: 502, message: "The delegate's Run failed." },
  subagent_cancelled: { status: 409, message: "The delegate's Run was cancelled." },
  delegation_not_found: { status: 404, message: "Delegation not found." },
} as const satisfies Record<string, ErrorInfo>;

export type ErrorCode = keyof typeof TABLE;

export const ERROR_CODES = Object.keys(TABLE) as ErrorCode[];

export function errorInfo(code: ErrorCode): ErrorInfo {
  return TABLE[code];
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(TABLE, value);
}

/** A failure with a fixed public code. `detail` is for logs only and must not carry secrets. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly detail?: string;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, detail?: string, headers?: Record<string, string>) {
    const info: ErrorInfo = TABLE[code];
    super(`${code}${detail ? `: ${detail}` : ""}`);
    this.name = "AppError";
    this.code = code;
    this.status = info.status;
    this.retryable = info.retryable ?? false;
    this.detail = detail;
    this.headers = headers;
  }
}

/** The public error body [GW-6]: fixed code and text, plus retryable when the code is. */
export function errorBody(code: ErrorCode): {
  error: { code: ErrorCode; message: string; retryable?: boolean };
} {
  const info: ErrorInfo = TABLE[code];
  return {
    error: info.retryable
      ? { code, message: info.message, retryable: true }
      : { code, message: info.message },
  };
}
