/**
 * Every hard bound of SPEC.md as one named constant. Modules import the bound
 * they enforce from here; nothing else in the tree spells these numbers.
 *
 * Grouped by SPEC section; the bracketed ID after each group names the clause.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

// ── Shape / home [PK] ────────────────────────────────────────────────────────
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 20815;
export const RELEASE = "0.1.0";
export const SYSTEM_AGENT_ID = "00000000-0000-4000-8000-000000000001";
/** Minimum Landlock ABI a Run needs [PK-5]. */
export const LANDLOCK_MIN_ABI = 6;

// ── Web Gateway [GW] ─────────────────────────────────────────────────────────
export const TOKEN_BYTES = 32; // 256-bit bootstrap token, 64 hex chars [GW-2]
export const TOKEN_MIN_CHARS = 10;
export const TOKEN_MAX_CHARS = 128;
export const SESSION_CAPACITY = 32;
export const SESSION_IDLE_MS = 2 * 60 * 60 * 1000;
export const SESSION_ABSOLUTE_MS = 12 * 60 * 60 * 1000;
export const LOGIN_FAILURES_PER_WINDOW = 5;
export const LOGIN_FAILURE_WINDOW_MS = 60 * 1000;
export const LOGIN_SOURCES_TRACKED = 1024;
export const MAX_CONCURRENT_CONNECTIONS = 64;
export const MAX_HEADER_BYTES = 16 * KiB;
export const KEEP_ALIVE_MS = 5 * 1000;
/** Request head (request line + headers) the connection guard buffers before it refuses with 431 [GW-1]. */
export const MAX_REQUEST_HEAD_BYTES = 32 * KiB;
/** A request head must be complete this long after its first byte [GW-1]. */
export const REQUEST_HEAD_TIMEOUT_MS = 5 * 1000;
/** A request body must be complete this long after its head [GW-1]. */
export const REQUEST_BODY_TIMEOUT_MS = 5 * 1000;
/** Client connections one peer address may hold at once (of MAX_CONCURRENT_CONNECTIONS) [GW-1]. */
export const MAX_CONNECTIONS_PER_PEER = 32;
/** Longest pause of the guard's accept loop after an accept error (doubling from 10 ms) [GW-1]. */
export const ACCEPT_BACKOFF_MAX_MS = 1000;
/** First pause of the guard's accept loop after an accept error [GW-1]. */
export const ACCEPT_BACKOFF_MIN_MS = 10;
/** A closed connection's server side may take this long to close before the guard cuts it [GW-1]. */
export const GUARD_UPSTREAM_CLOSE_WAIT_MS = 2000;
/** Before a fixed 400/408/431 answer, the server's last bytes are awaited at most this long [GW-1]. */
export const GUARD_ANSWER_WAIT_MS = 1000;
/** A chunk-size line (with extensions) of a chunked request body [GW-1]. */
export const CHUNK_LINE_MAX_BYTES = 1024;
/**
 * Descriptors the connection guard always leaves free for the rest of the server: a connection is
 * admitted only while 3 + this many are free, and dials the server only while 2 + half of it are
 * (Deno.serve gives up and the runtime panics at the descriptor limit) [GW-1].
 */
export const CONNECTION_FD_RESERVE = 32;
export const JSON_BODY_MAX_BYTES = 16 * KiB; // [GW-4]
export const USER_MESSAGE_MAX_BYTES = 8192; // [GW-4]
export const JSON_MAX_DEPTH = 8;
export const JSON_MAX_KEYS = 64;
export const LOG_ROTATE_BYTES = 5 * MiB; // [GW-6]
export const LOG_ROTATE_BACKUPS = 3;
export const LOG_FLUSH_INTERVAL_MS = 500;
export const LOG_BUFFER_MAX_BYTES = 64 * KiB;

// ── Agents / Conversations [AG] [CV] ─────────────────────────────────────────
export const AGENT_NAME_MAX_CHARS = 64;
export const AGENTS_MAX = 64;
export const CONVERSATIONS_PER_AGENT_MAX = 100; // [CV-1]
export const CONVERSATION_TITLE_MAX_CHARS = 120;
export const ACTIVE_RUNS_TOTAL_MAX = 4; // [CV-2]
export const TURN_PAGE_DEFAULT = 32; // [CV-3]
export const TURN_PAGE_MAX = 64; // [CV-3]
export const STATE_DB_JOURNAL_SIZE_LIMIT = 16 * MiB; // [CV-1]
export const STATE_DB_MAX_BYTES = 512 * MiB; // [CV-1]
/** Page size of new databases: a Turn touches ~40 pages; 1 KiB pages write a quarter of 4 KiB ones [PF-4]. */
export const SQLITE_PAGE_SIZE = 1024;
/** Prepared statements kept per open database, by SQL text, least recently used out [PF-5]. */
export const SQLITE_STATEMENTS_CACHED = 128;
/** At most one full GC + `malloc_trim` per this interval, only after a Run ended [PF-5]. */
export const HEAP_TRIM_INTERVAL_MS = 10_000;
/** A trim waits while Runs are active [PF-2], but never longer than this after the last one [PF-5]. */
export const HEAP_TRIM_DEFER_MAX_MS = 5 * 60_000;
export const SEARCH_QUERY_MAX_BYTES = 256; // [UI-9] UTF-8 bytes of `q`
export const SEARCH_RESULTS_MAX = 50; // [UI-9]
export const SEARCH_TERMS_MAX = 32; // [UI-9] whitespace-separated terms in one query
export const SEARCH_SNIPPET_TOKENS = 16; // [UI-9] tokens of context in a hit's snippet
export const CONVERSATION_EXPORT_MAX_BYTES = 8 * MiB; // [UI-9] an export document, and an import body
export const CONVERSATION_EXPORT_TURNS_MAX = 1024; // [UI-9] Turns in one export/import document
export const IMPORT_ANSWER_MAX_BYTES = 256 * KiB; // [UI-9] one imported assistant message
export const SQLITE_BUSY_TIMEOUT_MS = 5000;
export const INSTRUCTION_FILE_NAME = "agent-builder.md"; // [AG-4]
/** How long upgrade/delete wait for admitted Runs to release after cancel [AG-3]. */
export const AGENT_DRAIN_TIMEOUT_MS = 15 * 1000;
/** Cursor HMAC key bytes (in memory only, new per process) [CV-3]. */
export const SESSION_CURSOR_KEY_BYTES = 32;
/** Registry lifecycle audit rows kept; the oldest are trimmed on append [AG-1, OP-3]. */
export const AGENT_AUDIT_ROWS_MAX = 10_000;
export const INSTRUCTION_FILE_MAX_BYTES = 32 * KiB; // [CX-2]

// ── Events [EV] ──────────────────────────────────────────────────────────────
// A Turn of 32 model calls and 24 tool calls [SB-8] needs room: ≤ ~8 events per model call
// (request, attempts, response, blocks) and ≤ 4 per tool call (request, approval, completion),
// and its tool results (≤ 32 KiB canonical each) are kept in the journal. Write bound [OP-3]:
// ≤ 1 MiB durable per Run × 256 retained journals ⇒ ≤ 256 MiB of journal per Agent.
export const RUN_EVENTS_MAX = 1024; // [EV-2, SB-8]
export const RUN_LIVE_BYTES_MAX = 2 * MiB; // × 64 live records in memory ⇒ ≤ 128 MiB
export const RUN_DURABLE_BYTES_MAX = 1 * MiB;
export const EVENT_MAX_BYTES = 64 * KiB;
/**
 * An event body this long or longer is stored raw-deflated (with its Run's dictionary) when that
 * saves a quarter [PF-4]; every envelope is longer (≈ 190 bytes of ids and keys).
 */
export const EVENT_BODY_DEFLATE_MIN_BYTES = 128;
/** A completed answer this long or longer is stored raw-deflated when that saves a quarter [PF-4]. */
export const ANSWER_DEFLATE_MIN_BYTES = 1 * KiB;
export const JOURNAL_RUNS_RETAINED = 256;
export const LIVE_RUNS_IN_MEMORY = 64;
export const SSE_CLIENT_RECONNECTS_MAX = 3; // [EV-3]
export const REPLAY_PAGE_MAX = 128; // [EV-4]
export const REPLAY_CURSOR_MAX = 1_000_000;

// ── Model Broker [MB] ────────────────────────────────────────────────────────
export const DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434";
export const DEFAULT_MODEL = "qwen3.5:2b";
export const RUN_WINDOW_MAX_TOKENS = 32768; // [MB-2]
export const OUTPUT_RESERVE_TOKENS = 4096;
export const MODEL_STREAMS_MAX = 2; // [MB-4]
export const MODEL_QUEUE_WAIT_MS = 30 * 1000;
export const MODEL_FIRST_FRAME_MS = 60 * 1000; // [MB-5]
export const MODEL_IDLE_MS = 20 * 1000;
export const MODEL_CALL_MS = 120 * 1000;
export const RUN_DEADLINE_MS = 15 * 60 * 1000; // [SB-8] approval waits count
/** The shortest Run deadline a snapshot may carry (test hooks, an Agent's own limit). */
export const RUN_DEADLINE_MIN_MS = 1000;
/** An Agent's own Run deadline [SB-8]: 10 s to the product's 15 min (registry CHECK too). */
export const AGENT_RUN_DEADLINE_MIN_S = 10;
export const MODEL_RETRIES_BEFORE_FRAME = 1;
export const CIRCUIT_FAILURES_TO_OPEN = 2;
export const CIRCUIT_OPEN_MS = 30 * 1000;
export const CIRCUIT_ENTRIES_MAX = 16;
export const PROVIDER_STREAM_MAX_BYTES = 1 * MiB; // [MB-6]
export const PROVIDER_STREAM_MAX_FRAMES = 4096;
export const CONTENT_IPC_FRAMES_MAX = 128;
export const ANSWER_COMMIT_MAX_BYTES = 12 * KiB;
/** Visible text a stopped/failed Turn keeps (migration 0004 checks the same bound). */
export const PARTIAL_TEXT_MAX_BYTES = 12 * KiB; // [#18, CV-5]
export const REPETITION_WINDOW_CODEPOINTS = 2048; // [MB-7]
export const REPETITION_CYCLE_MIN_BYTES = 32;
export const REPETITION_CYCLE_MAX_BYTES = 512;
export const REPETITION_MIN_REPEATS = 3;
export const REPETITION_MIN_TOTAL_BYTES = 512;
export const REPETITION_CHECK_EVERY_BYTES = 64;
export const OVERFLOW_RECOVERY_ATTEMPTS = 1; // [MB-8]
export const USAGE_ROWS_PER_RUN_MAX = 64; // [MB-9]
export const MODEL_QUALIFY_TIMEOUT_MS = 5000; // per qualification request [MB-2]
export const MODEL_REQUALIFY_MIN_INTERVAL_MS = 5000; // on-demand re-qualification spacing
export const MODEL_WINDOW_MIN_TOKENS = 2048; // a smaller native window fails qualification
export const MODEL_ADDRESS_CANDIDATES_MAX = 4; // resolved addresses tried, in order, when pinning [MB-2]
export const MODEL_KEEP_ALIVE_S = 300; // keep_alive sent as a number of seconds [MB-3]
export const MODEL_TOOL_CALLS_PER_RESPONSE_MAX = 16;
export const PROVIDER_FRAME_MAX_BYTES = 64 * KiB; // one NDJSON line [MB-6]
export const PROVIDER_ERROR_BODY_MAX_BYTES = 4 * KiB; // non-200 body read for classification
export const PROVIDER_HEADER_MAX_BYTES = 16 * KiB;
// Discovery, reasoning, pull [MB-10..13]
export const MODEL_DISCOVERY_INTERVAL_MS = 5 * 60 * 1000; // re-discovery while idle [MB-10]
export const MODEL_TAGS_MAX = 256; // models read from /api/tags
export const MODEL_TAGS_BODY_MAX_BYTES = 1 * MiB;
export const MODEL_SHOW_CONCURRENCY = 4; // /api/show requests at a time
export const MODEL_SHOW_TIMEOUT_MS = 10 * 1000; // each /api/show
export const MODEL_SHOW_BODY_MAX_BYTES = 1 * MiB;
export const MODEL_NAME_MAX_BYTES = 256; // catalog model_id grammar
export const MODEL_NAME_PATH_PARTS_MAX = 3;
export const CLI_MODELS_MAX = 32; // `serve --model` repeated
export const MAX_WINDOW_MIN_TOKENS = 4096; // `--max-window` lower bound
export const REASONING_COMMIT_MAX_BYTES = 32 * KiB; // per model call [MB-12]
export const REASONING_DELTA_COALESCE_BYTES = 256;
export const REASONING_RUN_COMMIT_MAX_BYTES = 64 * KiB; // committed reasoning per Run (journal room)
export const REASONING_LIVE_RUN_MAX_BYTES = 256 * KiB; // reasoning streamed live per Run (live cap room)
export const PROVIDER_STREAM_REASONING_MAX_BYTES = 4 * MiB; // raw stream with reasoning on
export const PROVIDER_STREAM_REASONING_MAX_FRAMES = 16384;
export const PULL_PROGRESS_COALESCE_MS = 200; // [MB-13]
export const PULL_ERROR_MESSAGE_MAX_BYTES = 256;
export const PULL_LINE_MAX_BYTES = 64 * KiB; // one /api/pull progress line
export const PULL_SSE_SUBSCRIBERS_MAX = 8;
export const PULL_STREAM_MAX_BYTES = 64 * MiB; // one pull's progress stream
export const PULL_STREAM_MAX_LINES = 1_000_000;
export const PULL_IDLE_MS = 120 * 1000; // no progress line for this long ⇒ the pull failed
export const PULLS_REMEMBERED_MAX = 8; // finished pulls kept for late subscribers
export const CONTENT_DELTA_COALESCE_BYTES = 96; // 12 KiB / 128 frames [MB-6]
export const CONTENT_DELTA_COALESCE_MS = 50;

// ── Context [CX] ─────────────────────────────────────────────────────────────
export const CONTEXT_TEMPLATE_RESERVE_TOKENS = 256; // [CX-3]
export const CONTEXT_COLLAPSE_PERCENT = 80;
export const CONTEXT_CALIBRATION_USAGES = 16; // [CX-5]
/** Margin on an exact (verified tokenizer) count [CX-7]. */
export const CONTEXT_EXACT_MARGIN_PERCENT = 2;
/** `/api/show` with `verbose: true` carries the whole vocabulary (Qwen: ~5 MB) [CX-7]. */
export const MODEL_SHOW_VERBOSE_BODY_MAX_BYTES = 32 * MiB;
/** git status of the workspace [CX-9]: wall time, output bytes, paths listed. */
export const GIT_STATUS_TIMEOUT_MS = 2000;
export const GIT_STATUS_OUTPUT_MAX_BYTES = 16 * KiB;
export const GIT_STATUS_PATHS_MAX = 64;
/** A `/compact` summary [CX-9]: its size and the model call's deadline. */
export const COMPACT_SUMMARY_MAX_BYTES = 8 * KiB;
export const COMPACT_SUMMARY_TIMEOUT_MS = 120 * 1000;
/** Finished context preparations remembered for the 409 of a late cancel [§13]. */
export const PREPARATIONS_FINISHED_REMEMBERED = 64;
/** Compiled plans kept for inspection [CX-4]; each holds up to ~5 MiB of history text. */
export const CONTEXT_PLANS_IN_MEMORY = 8;

// ── Worker sandbox / IPC [SB] ────────────────────────────────────────────────
export const WORKER_MODEL_CALLS_MAX = 32; // [SB-8] (revises SB-5's 4)
export const WORKER_TOOL_CALLS_MAX = 24; // [SB-8] (revises SB-5's 2)
/** Tool calls one model response may carry; more ⇒ `model_tool_loop`, none executed. */
export const WORKER_CALLS_PER_RESPONSE_MAX = 4; // [SB-8]
/** Times the identical call (tool + argument digest) may run in one Turn. */
export const WORKER_IDENTICAL_CALLS_MAX = 3; // [SB-8] "more than 3 times" ⇒ loop
/** Tool-call references one `model.result` frame reports (enough to show any refusal). */
export const MODEL_RESULT_CALLS_MAX = 8;
/** Highest Control-Plane call id (`call-N`) a frame or event may name. */
export const CALL_ID_MAX = WORKER_TOOL_CALLS_MAX + MODEL_RESULT_CALLS_MAX;
export const IPC_LINE_MAX_BYTES = 64 * KiB; // [SB-4]
export const IPC_LINES_MAX = 2048;
export const IPC_TOTAL_BYTES_MAX = 4 * MiB;
/** Control→Worker sends and Worker request ids: 1 start + 32 model + 24 tool + 1 cancel ≤ 64. */
export const IPC_ROUNDS_MAX = 64;
export const IPC_ATTESTATION_TIMEOUT_MS = 10 * 1000;
export const IPC_REPLY_TIMEOUT_MS = 130 * 1000;
/**
 * Nice steps every sandboxed process (Workers, runners) and file-tool process runs below the
 * server [PF-2]: the Control Plane's event loop (UI, API, streams) keeps the CPU first on a busy host.
 */
export const SANDBOX_NICE_INCREMENT = 10;
export const WORKER_RLIMIT_CPU_S = 60;
/** Hard RLIMIT_CPU: above the soft limit so the kernel's first action is SIGXCPU, not SIGKILL. */
export const WORKER_RLIMIT_CPU_HARD_S = WORKER_RLIMIT_CPU_S + 1;
// V8 reserves ~50 GiB of address space (pointer cages, sandbox) at start-up, so the
// address-space cap only stops runaway mappings; RLIMIT_DATA bounds writable memory.
export const WORKER_RLIMIT_AS_BYTES = 64 * 1024 * MiB;
export const WORKER_RLIMIT_DATA_BYTES = 2 * 1024 * MiB;
export const WORKER_RLIMIT_FSIZE_BYTES = 1 * MiB;
export const WORKER_RLIMIT_NOFILE = 64;
export const WORKER_RLIMIT_NPROC = 256; // threads count too; root ignores it [SB-7]
export const RUN_TREE_ENTRIES_MAX = 1024; // [SB-6]
export const RUN_TREE_LOGICAL_BYTES_MAX = 16 * MiB;
export const RUN_TREE_ALLOCATED_BYTES_MAX = 32 * MiB;
export const RUN_TREE_CHECK_INTERVAL_MS = 1000;
/** Pre-warmed Workers [PF-1]: `serve --worker-pool N`, default 2, at most 4. */
export const WORKER_POOL_DEFAULT = 2;
export const WORKER_POOL_MAX = 4;
/** A pooled Worker idle this long is retired and replaced (its own first-frame wait is longer). */
export const WORKER_POOL_IDLE_MAX_MS = 10 * 60 * 1000;
export const WORKER_POOL_RETRY_MIN_MS = 500;
export const WORKER_POOL_RETRY_MAX_MS = 30 * 1000;
/**
 * The longest a take defers the pool's refill: the replacement starts once the Run's first
 * model call ended (or the Run did), so two Deno start-ups of CPU never compete with the
 * Run's way to its model [PF-1]; a slow model's Run starts it after this bound.
 */
export const WORKER_POOL_REFILL_DEFER_MAX_MS = 1000;

// ── Tools [TL] ───────────────────────────────────────────────────────────────
export const TOOL_RESULT_PROJECTION_MAX_BYTES = 4096; // [TL-3]
export const TOOL_RESULTS_PER_RUN_MAX_BYTES = 96 * KiB; // [CX-10] (revises TL-3's 16 KiB)
export const PERMISSIONS_PENDING_MAX = 32; // [TL-2]
export const OPERATION_LEDGER_ROWS_MAX = 4096;
export const PATH_COMPONENTS_MAX = 32; // [TL-4]
export const PATH_BYTES_MAX = 1024;
export const READ_FILE_MAX_BYTES = 1 * MiB;
/** Entries one workspace-browser listing shows (the operator's read-only view) [#18]. */
export const WORKSPACE_BROWSE_ENTRIES_MAX = 500;
export const READ_CHUNK_MAX_BYTES = 4096;
export const READ_CHUNK_MAX_LINES = 256;
export const READ_TIMEOUT_MS = 500;
export const GLOB_DEPTH_MAX = 16; // [TL-5]
export const GLOB_ENTRIES_MAX = 4096;
export const GLOB_FILES_MAX = 1024;
export const GREP_READ_MAX_BYTES = 2 * MiB;
export const GREP_MATCHES_MAX = 128;
export const SEARCH_RESULT_MAX_BYTES = 12 * KiB;
export const SEARCH_TIMEOUT_MS = 1000;
export const GREP_PATTERN_MAX_BYTES = 256;
export const GREP_PATTERN_QUESTION_MAX = 8;
export const GREP_LINE_MAX_BYTES = 16 * KiB;
/** Child processes that run the read file tools off the server's event loop [PF-2]. */
export const FILE_TOOL_PROCESSES = 2;
/** An idle file-tool process ends after this long; the next call starts one again [PF-2]. */
export const FILE_TOOL_IDLE_MS = 60_000;
/** A job line to a file-tool process (a path and a tool's validated arguments) [PF-2]. */
export const FILE_TOOL_JOB_MAX_BYTES = 256 * KiB;
/** An answer line from a file-tool process: the largest is an ACP whole-file read, escaped [PF-2]. */
export const FILE_TOOL_ANSWER_MAX_BYTES = 8 * READ_FILE_MAX_BYTES;
export const WRITE_CONTENT_MAX_BYTES = 8 * KiB; // [TL-6]
export const EDIT_FRAGMENT_MAX_BYTES = 4 * KiB;
export const EDIT_PREVIEW_MAX_BYTES = 4 * KiB;
export const EDIT_RESULT_MAX_BYTES = 12 * KiB;
export const EDIT_TIMEOUT_MS = 2000;
export const STALE_WRITE_TEMPS_CLEANED_MAX = 16;
export const BASH_ARGS_MAX = 8; // [TL-7]
export const RUNNER_WALL_MS = 12 * 1000;
export const RUNNER_OUTPUT_MAX_BYTES = 12 * KiB;
/** runtime-compile: the file and its relative imports [EX-1]. */
export const COMPILE_FILES_MAX = 64;
export const COMPILE_DIAGNOSTICS_MAX_BYTES = 12 * KiB;
/** runtime-compile: one file it reads (the checked file or a relative import). */
export const COMPILE_FILE_MAX_BYTES = 1 * MiB;
/** exec/run's bounded bash: the longest command text (the argv bounds of exec/command apply after). */
export const BOUNDED_BASH_MAX_BYTES = 4096;
// exec/command [EX-2]: argv, wall, rlimits of the runner sandbox, concurrency.
export const COMMAND_ARGV_MAX_ITEMS = 64;
export const COMMAND_ARG_MAX_ITEM_BYTES = 4 * KiB;
export const COMMAND_ARGV_MAX_TOTAL_BYTES = 16 * KiB;
export const COMMAND_TIMEOUT_MIN_S = 1;
export const COMMAND_TIMEOUT_MAX_S = 120;
export const COMMAND_TIMEOUT_DEFAULT_S = 60;
export const COMMAND_RLIMIT_CPU_S = 60;
export const COMMAND_RLIMIT_DATA_BYTES = 4 * 1024 * MiB;
export const COMMAND_RLIMIT_AS_BYTES = 64 * 1024 * MiB;
export const COMMAND_RLIMIT_NPROC = 128; // above the sandbox uid's tasks at spawn
export const COMMAND_RLIMIT_NOFILE = 256;
export const COMMAND_RLIMIT_FSIZE_BYTES = 64 * MiB;
/** Memory cgroup limit where the host offers one. */
export const COMMAND_MEMORY_CGROUP_BYTES = 4 * 1024 * MiB;
/** Foreground commands in the whole server; others wait, then exec_busy. */
export const COMMANDS_ACTIVE_MAX = 2;
export const COMMANDS_PER_RUN_MAX = 1;
export const COMMAND_SLOT_WAIT_MS = 30 * 1000;
/** stdout/stderr kept per stream: first and last half each [EX-4]. */
export const RUNNER_STREAM_HALF_BYTES = 32 * KiB;
export const RUNNER_LIVE_OUTPUT_MAX_BYTES = 256 * KiB;
export const RUNNER_LIVE_OUTPUT_COALESCE_MS = 100;
/** Longest NDJSON line either side of the runner sends (the compile job carries up to 64 files). */
export const RUNNER_LINE_MAX_BYTES = 16 * MiB;
/**
 * How long a spawned runner waits for its next server frame (its release, or a kill while a
 * job runs) before it gives up: one day — the server's own deadlines end a job long before.
 */
export const RUNNER_FRAME_WAIT_MS = 24 * 60 * 60 * 1000;
/** Runner start → verified ready (both stages and /proc). */
export const RUNNER_READY_TIMEOUT_MS = 15 * 1000;
/** After a kill: how long the runner may take to prove every process gone. */
export const RUNNER_RELEASE_TIMEOUT_MS = 10 * 1000;

// ── Slash commands [SC] ──────────────────────────────────────────────────────
export const COMMAND_REGISTRY_MAX = 32; // [SC-1]
export const COMMAND_INPUT_MAX_BYTES = 4096;
export const COMMAND_ARGS_MAX = 4;
export const COMMAND_ARG_MAX_BYTES = 256;
export const COMMAND_RESULT_MAX_BYTES = 64 * KiB;

// ── Operations [OP] ──────────────────────────────────────────────────────────
export const BACKUP_NAME_MAX_CHARS = 64;
export const BACKUP_ENTRIES_MAX = 100_000;
export const BACKUP_ENTRY_MAX_BYTES = 1024 * MiB;
export const BACKUP_TOTAL_MAX_BYTES = 8 * 1024 * MiB;
/** Raw or decompressed archive stream: file bytes plus headers, padding and manifest. */
export const BACKUP_ARCHIVE_MAX_BYTES = BACKUP_TOTAL_MAX_BYTES + 512 * MiB;
export const BACKUP_PATH_MAX_BYTES = 4096;
export const BACKUP_PATH_COMPONENT_MAX_BYTES = 255;
export const BACKUP_PAX_MAX_BYTES = 8 * KiB;
export const BACKUP_MANIFEST_MAX_BYTES = 32 * MiB;
/** Zero padding tolerated after the end-of-archive marker (tar record blocking). */
export const BACKUP_TRAILER_MAX_BYTES = 1 * MiB;
/**
 * [OP-4] A gzip archive may expand to at most max(floor, ratio × its size):
 * expanded bytes are counted while streaming, so a compression bomb costs at
 * most this much disk before it is refused. Product backups compress far
 * less than 32:1 except when tiny (the floor covers those).
 */
export const BACKUP_GZIP_RATIO_MAX = 32;
export const BACKUP_GZIP_FLOOR_BYTES = 256 * MiB;
/** Compressed bytes handed to the inflater per step (≤ ~1032× that is inflated at once). */
export const BACKUP_GZIP_STEP_BYTES = 16 * KiB;
/** Below this many bytes a backup/restore prints no progress line. */
export const BACKUP_PROGRESS_MIN_BYTES = 64 * MiB;
/** A private socket directory without a socket is a killed server's once this old [OP-2]. */
export const STALE_SOCKET_DIR_MIN_AGE_MS = 60_000;
export const SHUTDOWN_GRACE_MS = 5000;
/** After the HTTP server stopped: time for the connection guard to relay its last bytes [OP-2]. */
export const SHUTDOWN_RELAY_DRAIN_MS = 1000;

// ── Execution: scratch copies, change sets, exec/apply [EX-3..5] ────────────
// (argv, timeout and output bounds of commands are the runner's, above.)
/** Tool timeout of exec/command: the 120 s wall plus scratch sync and change-set time. */
export const EXEC_COMMAND_TOOL_TIMEOUT_MS = 180 * 1000;
export const SCRATCH_ENTRIES_MAX = 20_000; // [EX-3]
/** Directory depth below the workspace root a scratch copy holds, and a change-set walk reads. */
export const SCRATCH_DEPTH_MAX = 64;
export const SCRATCH_BYTES_MAX = 512 * MiB;
/** Notes (left-out entries) kept per sync; the count is always exact. */
export const SCRATCH_NOTES_MAX = 32;
export const CHANGE_SET_PATHS_MAX = 256; // [EX-4]
export const CHANGE_SET_DIFF_FILE_MAX_BYTES = 256 * KiB;
/** All unified diffs of one change set together; beyond it a path shows "diff withheld". */
export const CHANGE_SET_DIFFS_TOTAL_MAX_BYTES = 4 * MiB;
/** The summary of a change set in the model's projection lists at most this many paths. */
export const CHANGE_SET_SUMMARY_PATHS_MAX = 16;
/** A file exec/apply writes: the command's own file-size rlimit (FSIZE 64 MiB). */
export const EXEC_APPLY_FILE_MAX_BYTES = 64 * MiB; // [EX-5]
export const EXEC_APPLY_TIMEOUT_MS = 60 * 1000;

// ── Checkpoints and rewind [TL-11] ───────────────────────────────────────────
/** Replaced content kept per mutated file; a larger file is recorded as `too_large`. */
export const CHECKPOINT_FILE_MAX_BYTES = 1 * MiB;
/** Kept replaced content per Agent; past it the oldest checkpoints expire (visibly). */
export const CHECKPOINT_AGENT_MAX_BYTES = 64 * MiB;
/** One rewind restores its files inside this deadline (each file still atomic). */
export const REWIND_TIMEOUT_MS = 60 * 1000;
/** One stored exec record (argv, kept output, change-set summary); the schema CHECKs it too. */
export const EXEC_RECORD_MAX_BYTES = 512 * KiB;
/** Runs whose exec records (command output, change sets, diffs) an Agent keeps. */
export const EXEC_RECORDS_RUNS_RETAINED = 32;

// ── Background Tasks [EX-6] ─────────────────────────────────────────────────
/** Active (running) Tasks per Agent; a third is refused `task_limit`. */
export const TASKS_ACTIVE_PER_AGENT_MAX = 2;
/** Active Tasks in the whole server (separate from the 2 foreground commands); else `tasks_busy`. */
export const TASKS_ACTIVE_SERVER_MAX = 4;
/** A Task's wall-clock limit (its `timeout_s` may only lower it). */
export const TASK_WALL_MAX_MS = 30 * 60 * 1000;
/** Output spooled to the Task root; beyond it the tail is kept (and the cut said). */
export const TASK_OUTPUT_MAX_BYTES = 1 * MiB;
/** What a spool keeps when it overflows (then it grows to TASK_OUTPUT_MAX_BYTES again). */
export const TASK_OUTPUT_TRIM_TO_BYTES = 768 * KiB;
/** Finished Tasks an Agent keeps (newest first); older ones go with their roots. */
export const TASKS_RETAINED_PER_AGENT = 128;
/** A finished Task is kept this long at most. */
export const TASK_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** Finished Tasks per Agent whose scratch copy (their change set) is kept for exec/apply. */
export const TASK_SCRATCHES_KEPT_PER_AGENT = 8;
/** Tasks one list request returns (newest first; the retention bound). */
export const TASKS_LIST_MAX = TASKS_RETAINED_PER_AGENT + TASKS_ACTIVE_PER_AGENT_MAX;
/** Output tail a Task's API row carries (the whole spool is the task/output tool's and route's). */
export const TASK_ROW_TAIL_BYTES = 4 * KiB;
/** Output tail the Task route returns in full (the spool bound). */
export const TASK_ROUTE_TAIL_BYTES = 64 * KiB;

// ── Extensions (MCP) [LC-5] ─────────────────────────────────────────────────
export const MCP_SERVERS_MAX = 8;
export const MCP_TOOLS_PER_SERVER_MAX = 32;
/** One JSON-RPC request body sent to an MCP server. */
export const MCP_REQUEST_MAX_BYTES = 64 * KiB;
/** One HTTP response body read from an MCP server (JSON or the SSE stream up to the answer). */
export const MCP_RESPONSE_MAX_BYTES = 256 * KiB;
/** Response status line + headers of an MCP server. */
export const MCP_RESPONSE_HEAD_MAX_BYTES = 16 * KiB;
/** One MCP operation (initialize + the request), connection included. */
export const MCP_CALL_TIMEOUT_MS = 10 * 1000;
/** tools/list pages followed per discovery. */
export const MCP_LIST_PAGES_MAX = 4;
/** A tool name as the server spells it ([A-Za-z0-9_-]). */
export const MCP_TOOL_NAME_MAX_BYTES = 64;
/** A tool description (after escaping) offered to the model; longer ones are cut visibly. */
export const MCP_TOOL_DESCRIPTION_MAX_CHARS = 300;
/** Arguments of one MCP tool that map onto the ToolSpec subset. */
export const MCP_TOOL_ARGS_MAX = 16;
/** Model-chosen arguments of one MCP call (they are journaled whole in one ≤ 64 KiB event). */
export const MCP_ARGS_MAX_BYTES = 48 * KiB;
/** One MCP tool result as the canonical result (the `tool.call.completed` event keeps ≤ 32 KiB). */
export const MCP_RESULT_TEXT_MAX_BYTES = 32 * KiB;
/** Installed skills per Agent [LC-3]. */
export const SKILLS_PER_AGENT_MAX = 16;
/**
 * The tools one Run's toolset may name: room for 16 built-ins, the Agent's
 * skills [LC-3] and every tool of 8 servers × 32, so the extension bounds are never cut here. (A toolset
 * that large is still subject to admission [CX-3]: its manifest must fit the
 * model's window, else the Run is refused `model_context_limit`.)
 */
export const TOOLSET_TOOLS_MAX = 16 + SKILLS_PER_AGENT_MAX +
  MCP_SERVERS_MAX * MCP_TOOLS_PER_SERVER_MAX;

// ── Subagents: agent/delegate [LC-2] ────────────────────────────────────────
/** Bytes of the parent's message to the delegate (the parent→child mailbox message). */
export const SUBAGENT_MESSAGE_MAX_BYTES = 4096;
/** Bytes of the child's answer the parent gets (longer is cut at a UTF-8 boundary). */
export const SUBAGENT_ANSWER_MAX_BYTES = 8192;
/** Delegations (child Runs) active in the whole server at once. */
export const SUBAGENTS_ACTIVE_MAX = 2;
/** Delegations one parent Run may make over its life. */
export const SUBAGENTS_PER_PARENT_RUN_MAX = 1;
/** Wall time of a child Run, from its admission to its terminal; past it `subagent_timeout`. */
export const SUBAGENT_WALL_MS = 45_000;
/** Messages in one delegation's mailbox: parent→child (the message) and child→parent (answer). */
export const SUBAGENT_MAILBOX_MAX = 2;
/** Delegation rows kept per (parent) Agent; older finished ones are pruned. */
export const DELEGATIONS_RETAINED_MAX = 128;
/** Delegations one list read returns (the Tasks panel's child Runs). */
export const DELEGATIONS_LIST_MAX = 32;

// ── bounds that lived in their modules (one owner per bound) [#14] ─────────────
/** Grace for a Worker to report `cancelled` before it is killed. */
export const CANCEL_GRACE_MS = 2000;
/** Grace past the Run deadline for the Worker's last read (the kernel's own timer fires first). */
export const WORKER_READ_GRACE_MS = 5000;
/**
 * Synthetic warm-up Turns a pooled Worker runs while it waits (each only while no frame is
 * waiting) [PF-1]: after one (V8 had run the path once), decoding the Run's first frame still
 * took ~0.4 ms more than the next frame's; after three it does not, and the Worker's CPU from
 * `turn.start` to `model.call` falls from ~1.5 to ~1.1 ms (docs/performance.md).
 */
export const WORKER_WARM_UP_TURNS = 3;
/** Toolset manifests (canonical JSON and digest) remembered for the next Runs [PF-1]. */
export const TOOLSET_MANIFESTS_KEPT = 8;
/** Bytes of the live/journal caps kept free for the terminal event so a full journal can still end. */
export const TERMINAL_RESERVE_BYTES = 2048;
/** Keep-alive comment interval of event streams (long model calls, pulls). */
export const SSE_KEEPALIVE_MS = 15_000;
/** Completed Turns read for history per Run (collapse keeps what fits) [CX-1]. */
export const HISTORY_TURNS_READ_MAX = 256;
/** Deadline of the sandbox probe Worker (doctor, start-up). */
export const WORKER_PROBE_DEADLINE_MS = 30_000;
/** Bytes of one matching line shown in a grep result. */
export const GREP_LINE_SHOWN_MAX_BYTES = 512;
/** Bytes of the 12 KiB search result bound kept for its envelope (names, counts, reason). */
export const SEARCH_ENVELOPE_RESERVE_BYTES = 256;
/** Bytes of the read result bound kept for its envelope around the window text and path. */
export const READ_RESULT_ENVELOPE_RESERVE_BYTES = 256;
/**
 * How long a contended instance lock is retried before the home counts as held. A process that
 * forks (Deno.Command, on any thread) shares every open file description — lock included,
 * CLOEXEC or not — until its child execs, so a just-released lock can look held for a moment; a
 * real holder holds it for far longer than this.
 */
export const INSTANCE_LOCK_RETRY_MS = 500;
/** Step between instance-lock retries. */
export const INSTANCE_LOCK_RETRY_STEP_MS = 10;
/** Characters of a Turn-page cursor token; longer is invalid_session_cursor. */
export const CURSOR_TOKEN_MAX_CHARS = 256;
/** Depth of a Run's process tree that the tree walk follows. */
export const RUN_TREE_DEPTH_MAX = 64;
/** Characters of one log field value (longer is cut). */
export const LOG_FIELD_MAX_CHARS = 200;
/** The longest duration an event carries (elapsed_ms, duration_ms): one day. */
export const DURATION_MAX_MS = 86_400_000;

// ── skills [LC-3] ───────────────────────────────────────────────────────────────
/** Bytes a runner job may hand its program on stdin (a skill's JSON arguments). */
export const RUNNER_STDIN_MAX_BYTES = 64 * KiB;
/** A skill archive (`.tar.gz`, the request body) is at most this large [LC-3]. */
export const SKILL_ARCHIVE_MAX_BYTES = 12 * KiB;
/** The members of a skill archive hold at most this many bytes together [LC-3]. */
export const SKILL_EXPANDED_MAX_BYTES = 16 * KiB;
/**
 * The whole expanded tar stream (members + headers + the end marker and the
 * record padding `tar` adds: 10 KiB records) is cut here before parsing.
 */
export const SKILL_TAR_STREAM_MAX_BYTES = 32 * KiB;
/** `skill.json` is at most this large. */
export const SKILL_MANIFEST_MAX_BYTES = 4 * KiB;
/** Characters of a skill's description (offered to the model behind a fixed prefix). */
export const SKILL_DESCRIPTION_MAX_CHARS = 300;
/** Wall time of one skill script (from its start in the runner). */
export const SKILL_WALL_MS = 10_000;
/** Bytes of a skill call's arguments (the JSON on its stdin). */
export const SKILL_ARGS_MAX_BYTES = 16 * KiB;
/** Bytes of a skill's stdout that reach the model (head kept, cut marked) — the answer fits [TL-3]. */
export const SKILL_ANSWER_MAX_BYTES = 3 * KiB;
/** Bytes of a skill's stderr kept in its result (tail). */
export const SKILL_STDERR_MAX_BYTES = 512;
/** Files of a skill's output directory listed in its result (name and size). */
export const SKILL_OUTPUT_FILES_LISTED_MAX = 16;
/** A skill tool call as a whole: the runner's start and proof of release around SKILL_WALL_MS. */
export const SKILL_TOOL_TIMEOUT_MS = SKILL_WALL_MS + 20_000;
// External runners over the Agent Client Protocol [LC-6]
/** Registered `--acp-runner` commands. */
export const ACP_RUNNERS_MAX = 8;
/** argv words of one runner command. */
export const ACP_ARGV_MAX = 32;
/** `--acp-runner-env` variables forwarded to one runner. */
export const ACP_ENV_VARS_MAX = 16;
/** Bytes of one NDJSON line from a runner (a longer line is a protocol error). */
export const ACP_LINE_MAX_BYTES = 1 * MiB;
/** `session/update` notifications of one Run; past it the Run ends `runner_flood`. */
export const ACP_UPDATES_PER_RUN_MAX = 2048;
/** Requests a runner may have open at once toward the product (more is a protocol error). */
export const ACP_PEER_REQUESTS_MAX = 8;
/** `initialize` and `session/new` each answer within this. */
export const ACP_HANDSHAKE_TIMEOUT_MS = 20_000;
/** A runner process idle this long after its Turn is reaped (reuse per Conversation). */
export const ACP_IDLE_MS = 5 * 60 * 1000;
/** Runner processes kept alive at once (idle ones beyond it are reaped oldest first). */
export const ACP_PROCESSES_MAX = 4;
/** Sessions one runner process serves before it is replaced (one per Turn). */
export const ACP_SESSIONS_PER_PROCESS_MAX = 64;
/** Bytes of the runner's stderr kept for the log (the rest is drained and dropped). */
export const ACP_STDERR_KEEP_BYTES = 4 * KiB;
/** Bytes of a Conversation's earlier Turns sent with a prompt (newest kept). */
export const ACP_HISTORY_MAX_BYTES = 32 * KiB;
/** Bytes of one request body to the scoped MCP gateway. */
export const ACP_GATEWAY_BODY_MAX_BYTES = 64 * KiB;
/** Live per-Run gateway tokens at once. */
export const ACP_GATEWAY_TOKENS_MAX = 16;
// ── documents and attachments [LC-4, UI-12] ───────────────────────────────────
/** document/extract_text reads files up to this size; attachments are stored up to it. */
export const DOCUMENT_MAX_BYTES = 16 * MiB;
/** Characters (Unicode code points) of one extract_text window, at most and by default. */
export const DOCUMENT_WINDOW_MAX_CHARS = 3000;
/** Highest `offset` the tool accepts (a window start, in characters). */
export const DOCUMENT_OFFSET_MAX_CHARS = 256 * MiB;
/** Wall time of one extraction in the runner (start-up and library load included). */
export const DOCUMENT_EXTRACT_WALL_MS = 45 * 1000;
/** RLIMIT_DATA of the extracting runner (lowered before any document byte is parsed). */
export const DOCUMENT_RLIMIT_DATA_BYTES = 1024 * MiB;
/** DOCX (zip) bounds, checked on the central directory and while inflating [LC-4]. */
export const DOCX_ENTRIES_MAX = 1000;
export const DOCX_EXPANDED_MAX_BYTES = 64 * MiB;
export const DOCX_RATIO_MAX = 100;
/** Attempts at a free name (`name (2).ext` …) before an attachment is refused. */
export const ATTACHMENT_NAME_ATTEMPTS_MAX = 100;
/** UTF-8 bytes of a stored attachment name (the extension kept). */
export const ATTACHMENT_NAME_MAX_BYTES = 128;
/** Rules of one Agent's policy [TL-9]. */
export const POLICY_RULES_MAX = 64;
/** Policy-change audit entries the policy route returns (newest first) [TL-9]. */
export const POLICY_AUDIT_SHOWN_MAX = 20;
/** Lines of context around each hunk of an approval diff [TL-12]. */
export const DIFF_CONTEXT_LINES = 3;
/** Bytes of the full approval diff kept one click away; larger is not kept [TL-12]. */
export const APPROVAL_FULL_DIFF_MAX_BYTES = 256 * KiB;
/**
 * Edit distance (lines) the diff library may explore for an approval diff; past it the exact
 * single-hunk diff (whole differing middle) is shown instead, so a 1 MiB rewrite costs no more
 * than a bounded search [TL-12].
 */
export const APPROVAL_DIFF_EDIT_LENGTH_MAX = 2000;
