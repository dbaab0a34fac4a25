/**
 * agent-builder: one executable, several sub-commands [PK-1].
 * `worker`, `runner` and `file-tools` are internal re-exec modes and are not listed in help.
 */
// First: zod is configured before any schema is built [PF-2].
import "./runtime/zod_jitless.ts";
import { RELEASE } from "./runtime/limits.ts";
import { UsageError } from "./runtime/argv.ts";
import { AppError } from "./runtime/errors.ts";

const HELP = `agent-builder ${RELEASE} — local-first agent runtime

Usage: agent-builder <command> [options]

Commands:
  serve [--host 127.0.0.1] [--port 20815] [--home DIR] [--ollama URL]
        [--model NAME]... [--default-model NAME] [--max-window N] [--runner-user nobody]
        [--worker-pool 2]
                          serve the web UI and API (--model, repeatable ≤ 32: the catalog is
                          exactly these models, in order; default: every model Ollama has;
                          as root, Workers and commands run as --runner-user; --worker-pool
                          0..4 confined Workers wait pre-warmed for the next Runs)
        [--mcp NAME=URL]... [--mcp-allow-ip ADDR]... [--mcp-ca NAME=FILE]...
                          MCP servers (≤ 8; https, or http to an allowlisted IP literal);
                          each Agent enables them in Extensions (default none)
        [--acp-runner NAME=COMMAND]... [--acp-runner-env NAME=VAR]...
                          external ACP runners (≤ 8; COMMAND split on spaces, no shell; env:
                          PATH, HOME and the named variables); an Agent bound to one runs its
                          Turns there — operator-owned execution, not sandboxed (docs/acp.md)
  rotate-token [--home DIR] [--generate]
                          set a new bootstrap token (hidden TTY input) and log out every browser
  backup NAME [--home DIR] [--gzip]
                          write a consistent snapshot of data/ to backups/NAME.tar(.gz)
  restore FILE --yes [--home DIR]
                          replace data/ with a backup (the server must be stopped)
  doctor [--json] [--ollama URL]
                          report what this host supports (sandbox, model qualification)
  version                 print the release
  help                    this text

Every command takes --home DIR (default: the current directory).
`;

type Command = (argv: string[]) => number | Promise<number>;

const COMMANDS: Record<string, Command> = {
  // Internal re-exec mode [SB-1]: always confines itself before running a body.
  // Stage 1 only confines: the Worker body is loaded by stage 2 alone [PF-1].
  worker: async (argv) =>
    (await import("./sandbox/worker_entry.ts")).workerCommand(argv, {
      body: {
        load: async () => (await import("./runtime/kernel/worker_main.ts")).harnessWorkerBody,
      },
    }),
  // Internal re-exec mode [EX-1]: the runner confines itself before it runs anything.
  runner: async (argv) => (await import("./sandbox/runner_entry.ts")).runnerCommand(argv),
  // Internal mode [PF-2]: the read file tools off the server's event loop, one job at a time.
  "file-tools": async (argv) =>
    (await import("./runtime/tools/file_tool_process.ts")).fileToolsCommand(argv),
  // Loaded on demand so a Worker never loads (or holds threads for) server code:
  // the confined process stays small and its spawn fast (see worker_spawn_bench).
  serve: async (argv) => (await import("./runtime/cli/serve.ts")).serveCommand(argv),
  doctor: async (argv) => (await import("./runtime/cli/doctor.ts")).doctorCommand(argv),
  "rotate-token": async (argv) =>
    (await import("./runtime/cli/rotate_token.ts")).rotateTokenCommand(argv),
  backup: async (argv) => (await import("./runtime/cli/backup.ts")).backupCommand(argv),
  restore: async (argv) => (await import("./runtime/cli/restore.ts")).restoreCommand(argv),
  version: () => {
    console.log(RELEASE);
    return 0;
  },
  help: () => {
    console.log(HELP);
    return 0;
  },
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h") {
    console.log(HELP);
    return name === undefined ? 2 : 0;
  }
  const cmd = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!cmd) {
    console.error(`agent-builder: unknown command '${name}'. Run 'agent-builder help'.`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  try {
    return await cmd(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`agent-builder ${name}: ${err.message}`);
      return 2;
    }
    if (err instanceof AppError) {
      // The operator's own terminal: the fixed code plus the log-only detail (e.g. which path).
      console.error(`agent-builder ${name}: ${err.code}${err.detail ? ` — ${err.detail}` : ""}`);
      return 1;
    }
    throw err;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
