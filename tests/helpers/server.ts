/**
 * Starts the real server as a child process (`deno run main.ts serve`) on a
 * free loopback port in a temp home, waits for /health, and stops it with
 * SIGTERM. Integration and browser tests use this; nothing is mocked. A server
 * whose environment sets a test hook (`AGENT_BUILDER_TEST_*`) is started through
 * the test entry (test_server_entry.ts) instead: the shipped entry reads none.
 */
import { makeTempHome } from "./home.ts";

export const REPO = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
export const DENO = Deno.execPath();

export interface ServerHandle {
  url: string;
  origin: string;
  port: number;
  home: string;
  child: Deno.ChildProcess;
  /** Everything the server printed so far (stdout + stderr). */
  output(): string;
  /** SIGTERM and wait; returns the exit code. */
  stop(): Promise<number>;
  /** SIGKILL (crash injection) and wait. */
  kill(): Promise<void>;
}

export interface StartServerOptions {
  /** Reuse an existing home (e.g. after a restart). */
  home?: string;
  /** Extra CLI args (e.g. ["--ollama", url]). */
  args?: string[];
  /** Environment additions. */
  env?: Record<string, string>;
}

/** The entry that arms test hooks from the environment (the shipped main.ts never does). */
export const TEST_ENTRY = `${REPO}/tests/helpers/test_server_entry.ts`;
const TEST_ENV_PREFIX = "AGENT_BUILDER_TEST_";

/** The exact permission flags of the launcher, for spawning main.ts in tests. */
export const RUN_FLAGS = [
  "run",
  "--quiet",
  "--no-prompt",
  "--config",
  `${REPO}/deno.json`,
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-ffi",
  "--allow-run",
  "--allow-env",
  "--allow-sys",
];

export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

export async function startTestServer(opts: StartServerOptions = {}): Promise<ServerHandle> {
  const home = opts.home ?? makeTempHome();
  const hooked = Object.keys(opts.env ?? {}).some((k) => k.startsWith(TEST_ENV_PREFIX));
  const entry = hooked ? TEST_ENTRY : `${REPO}/main.ts`;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = freePort();
    const child = new Deno.Command(DENO, {
      args: [
        ...RUN_FLAGS,
        entry,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--home",
        home,
        // Tests start many servers: no pre-warmed Workers unless a test asks for them
        // (tests/integration/worker_pool_test.ts does) [PF-1].
        ...(opts.args?.includes("--worker-pool") ? [] : ["--worker-pool", "0"]),
        ...(opts.args ?? []),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { DENO_NO_UPDATE_CHECK: "1", ...opts.env },
    }).spawn();
    let out = "";
    const dec = new TextDecoder();
    const pump = async (s: ReadableStream<Uint8Array>) => {
      for await (const c of s) out += dec.decode(c, { stream: true });
    };
    const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    let exited: Deno.CommandStatus | null = null;
    child.status.then((s) => (exited = s));
    while (Date.now() < deadline && exited === null) {
      try {
        const r = await fetch(`${url}/health`);
        await r.body?.cancel();
        if (r.ok) {
          let status: Promise<Deno.CommandStatus> | null = null;
          return {
            url,
            origin: url,
            port,
            home,
            child,
            output: () => out,
            async stop() {
              if (exited === null) {
                try {
                  child.kill("SIGTERM");
                } catch { /* already gone */ }
              }
              status ??= child.status;
              const s = await status;
              await pumps;
              return s.code;
            },
            async kill() {
              try {
                child.kill("SIGKILL");
              } catch { /* already gone */ }
              await child.status;
              await pumps;
            },
          };
        }
      } catch { /* not up yet */ }
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await pumps;
    if (!/AddrInUse|address already in use/i.test(out)) {
      throw new Error(`server did not start:\n${out}`);
    }
  }
  throw new Error("server did not start after 3 port attempts");
}
