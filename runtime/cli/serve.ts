/**
 * `agent-builder serve`: takes the home's instance lock, opens the App, listens
 * (127.0.0.1:20815 by default), and shuts down gracefully on SIGINT/SIGTERM
 * [PK-1, GW-1, OP-2].
 */
// First: zod is configured before any schema is built [PF-2].
import "../zod_jitless.ts";
import { type AppOptions, createApp } from "../app.ts";
import { AppError } from "../errors.ts";
import { resolveHome } from "../home.ts";
import { acquireInstanceLock } from "../instance.ts";
import {
  DEFAULT_HOST,
  DEFAULT_OLLAMA_URL,
  DEFAULT_PORT,
  MCP_SERVERS_MAX,
  WORKER_POOL_DEFAULT,
  WORKER_POOL_MAX,
} from "../limits.ts";
import { parseMcpFlag } from "../extensions/service.ts";
import { parseAllowIp } from "../extensions/net_rules.ts";
import { parseRunnerFlags, RunnerFlagError } from "../acp/runners.ts";
import { createFileLogger } from "../log.ts";
import { noteStartUpEnded, startHeapTrim } from "../heap_trim.ts";
import { ensurePrivateDir } from "../path_safety.ts";
import { startServer } from "../http/server.ts";
import { createCatalog } from "../model/catalog.ts";
import { parseArgs, UsageError } from "../argv.ts";
import { configureSandboxUser, DEFAULT_SANDBOX_USER } from "../../sandbox/identity.ts";

/** Test-only hooks handed to the App; the shipped entry (main.ts) passes none. */
export type ServeHooks = Pick<AppOptions, "faults" | "runTestHooks" | "taskWallMs">;

/** Pulls every `--name value` / `--name=value` out of argv (a repeatable flag). */
export function takeRepeated(
  argv: readonly string[],
  name: string,
): { values: string[]; rest: string[] } {
  const values: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === `--${name}`) {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`--${name} needs a value`);
      values.push(v);
    } else if (a.startsWith(`--${name}=`)) values.push(a.slice(name.length + 3));
    else rest.push(a);
  }
  return { values, rest };
}

/** `--mcp` and `--mcp-allow-ip` values, checked before anything opens (exit 2). */
export function parseExtensionFlags(
  mcp: readonly string[],
  allow: readonly string[],
  ca: readonly string[] = [],
): { cli: { name: string; url: string; ca?: string }[]; allowIps: string[] } {
  const allowIps: string[] = [];
  for (const v of allow) {
    const ip = parseAllowIp(v);
    if (ip === null) throw new UsageError(`--mcp-allow-ip needs an exact IP literal, not ${v}`);
    allowIps.push(ip);
  }
  if (mcp.length > MCP_SERVERS_MAX) {
    throw new UsageError(`at most ${MCP_SERVERS_MAX} --mcp servers`);
  }
  const cli: { name: string; url: string; ca?: string }[] = [];
  for (const v of mcp) {
    let c;
    try {
      c = parseMcpFlag(v, allowIps);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (cli.some((x) => x.name === c.name)) throw new UsageError(`--mcp ${c.name} given twice`);
    cli.push(c);
  }
  // `--mcp-ca NAME=FILE`: an extra PEM CA for that server's TLS (read now, ≤ 16 KiB).
  for (const v of ca) {
    const i = v.indexOf("=");
    const entry = cli.find((c) => i > 0 && c.name === v.slice(0, i));
    if (!entry) throw new UsageError("--mcp-ca needs NAME=FILE for a NAME given with --mcp");
    let pem: string;
    try {
      pem = Deno.readTextFileSync(v.slice(i + 1));
    } catch {
      throw new UsageError(`--mcp-ca ${entry.name}: the file cannot be read`);
    }
    if (pem.length > 16384 || !pem.includes("-----BEGIN CERTIFICATE-----")) {
      throw new UsageError(`--mcp-ca ${entry.name}: not a PEM certificate of at most 16 KiB`);
    }
    entry.ca = pem;
  }
  return { cli, allowIps };
}

export async function serveCommand(argv: string[], hooks: ServeHooks = {}): Promise<number> {
  // `--model` is repeatable (≤ 32, the catalog in this order) [MB-10]; the rest are single flags.
  const { values: models, rest: rest0 } = takeRepeated(argv, "model");
  // Extensions [LC-5]: `--mcp NAME=URL` (repeatable, ≤ 8), `--mcp-allow-ip ADDR` (repeatable).
  const { values: allowRaw, rest: rest1 } = takeRepeated(rest0, "mcp-allow-ip");
  const { values: caRaw, rest: rest2 } = takeRepeated(rest1, "mcp-ca");
  const { values: mcpRaw, rest: rest3 } = takeRepeated(rest2, "mcp");
  const extensions = parseExtensionFlags(mcpRaw, allowRaw, caRaw);
  // External runners [LC-6]: `--acp-runner NAME=COMMAND`, `--acp-runner-env NAME=VAR`.
  const { values: acpEnvRaw, rest: rest4 } = takeRepeated(rest3, "acp-runner-env");
  const { values: acpRaw, rest } = takeRepeated(rest4, "acp-runner");
  let acpRunners;
  try {
    acpRunners = parseRunnerFlags(acpRaw, acpEnvRaw, (k) => Deno.env.get(k));
  } catch (err) {
    if (err instanceof RunnerFlagError) throw new UsageError(err.message);
    throw err;
  }
  const a = parseArgs(rest, {
    flags: [
      "host",
      "port",
      "home",
      "ollama",
      "default-model",
      "max-window",
      "runner-user",
      "worker-pool",
    ],
  });
  // Pre-warmed Workers [PF-1]: 0 (every Run spawns its own) .. WORKER_POOL_MAX.
  const workerPool = a.flags["worker-pool"] === undefined
    ? WORKER_POOL_DEFAULT
    : Number(a.flags["worker-pool"]);
  if (!Number.isInteger(workerPool) || workerPool < 0 || workerPool > WORKER_POOL_MAX) {
    throw new UsageError(`--worker-pool must be 0..${WORKER_POOL_MAX}`);
  }
  // The account Workers and runners switch to when this server runs as root [SB-7, EX-1].
  const runnerUser = a.flags["runner-user"] ?? DEFAULT_SANDBOX_USER;
  if (!configureSandboxUser(runnerUser)) {
    throw new UsageError(`--runner-user ${runnerUser} is not an unprivileged account of this host`);
  }
  const host = a.flags.host ?? DEFAULT_HOST;
  const port = a.flags.port === undefined ? DEFAULT_PORT : Number(a.flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError("--port must be 0..65535");
  }
  const ollamaUrl = a.flags.ollama ?? DEFAULT_OLLAMA_URL;
  const maxWindow = a.flags["max-window"] === undefined ? undefined : Number(a.flags["max-window"]);
  if (maxWindow !== undefined && !Number.isSafeInteger(maxWindow)) {
    throw new UsageError("--max-window must be an integer");
  }
  // Validated here (CatalogError is a UsageError: exit 2) before anything is opened.
  const catalog = {
    models: models.length > 0 ? models : null,
    defaultModel: a.flags["default-model"] ?? null,
    maxWindow,
  };
  createCatalog({ ollamaUrl, ...catalog });
  const home = resolveHome(a.flags.home ?? Deno.cwd());
  // rotate-token sends SIGHUP to the validated pid [GW-2]; listen before the
  // pid record exists so the signal can never hit its default (terminate).
  let reloadToken: (() => void) | null = null;
  const onHup = () => {
    try {
      reloadToken?.();
    } catch (err) {
      // The gateway logged it and now refuses every session: fail closed.
      if (!(err instanceof AppError)) throw err;
    }
  };
  Deno.addSignalListener("SIGHUP", onHup);
  let lock;
  try {
    lock = acquireInstanceLock(home.root);
  } catch (err) {
    if (err instanceof AppError && err.code === "instance_locked") {
      console.error(`agent-builder: another server is already running for ${home.root}`);
      return 3;
    }
    throw err;
  }
  ensurePrivateDir(home.root, ".runtime/control-plane");
  const log = createFileLogger({ path: `${home.root}/.runtime/control-plane/server.log` });
  const app = createApp({
    home,
    log,
    ollamaUrl,
    catalog,
    extensions,
    acpRunners,
    workerPool,
    ...hooks,
  });
  reloadToken = () => app.gateway.reloadToken();
  const server = await startServer({
    hostname: host,
    port,
    routes: app.routes,
    gateway: app.gateway,
    log,
  });
  const shown = host.includes(":") ? `[${host}]` : host;
  console.log(`agent-builder listening on http://${shown}:${server.port}/ (home ${home.root})`);
  // SECURITY: say where the token is, never what it is [GW-2].
  console.log(`log in with the token in ${home.root}/${home.secretsRel}/web-bootstrap-token`);
  log.info("server.started", { port: server.port });
  const heapTrim = startHeapTrim(); // [PF-5] RSS stays flat under a soak
  // [PF-5] What the start-up freed goes back to the kernel now, not at the first Run's end.
  noteStartUpEnded();
  Deno.unrefTimer(setTimeout(() => heapTrim.tick(), 0));
  // [AG-5] The operator learns at once which Agents did not start (ids and fixed reasons only).
  const broken = app.agents.list().filter((a) => a.state === "unavailable");
  if (broken.length > 0) {
    console.error(
      `agent-builder: ${broken.length} Agent(s) unavailable (the others serve; ` +
        `delete or repair them, see 'agent-builder doctor'):`,
    );
    for (const a of broken) console.error(`  ${a.id}: ${a.unavailable_reason}`);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("server.stopping", { signal });
    // Stop admission and converge active Runs first: their live SSE streams end
    // with the Runs, so the HTTP shutdown below does not wait on them [OP-2].
    await app.runs.shutdown();
    // A running pull's progress stream would hold the HTTP drain open [MB-13].
    await app.pulls.close();
    await server.shutdown();
  };
  const onInt = () => void stop("SIGINT");
  const onTerm = () => void stop("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  await server.finished;
  Deno.removeSignalListener("SIGINT", onInt);
  Deno.removeSignalListener("SIGTERM", onTerm);
  Deno.removeSignalListener("SIGHUP", onHup);
  await app.close();
  heapTrim.stop();
  log.info("server.stopped");
  log.close();
  lock.release();
  console.log("agent-builder stopped");
  return 0;
}
