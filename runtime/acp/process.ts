/**
 * One runner process and its ACP connection [LC-6]: spawn (no shell, cleared
 * environment plus the runner's explicit one, cwd = the Agent's workspace),
 * the `initialize` handshake, sessions, and the reap.
 *
 * What this file enforces:
 * - the process starts with `clearEnv` and exactly `RunnerSpec.env`; nothing of
 *   the Control Plane's environment or secrets is inherited;
 * - `initialize` offers exactly what the product implements: `fs.readTextFile`
 *   and `fs.writeTextFile`, never terminals; a peer that answers another
 *   protocol version, or not within ACP_HANDSHAKE_TIMEOUT_MS, does not start
 *   (`runner_start_failed`);
 * - the runner's requests and notifications reach only the Turn currently
 *   attached (`attach`); outside a Turn a request is refused and a
 *   notification dropped;
 * - `reap` always ends with the process waited for: SIGTERM, then SIGKILL after
 *   the grace; stderr is drained (its first ACP_STDERR_KEEP_BYTES kept for the log).
 * What it leaves to others: the OS-level confinement of the runner — there is
 * none; it is operator-owned execution (docs/acp.md).
 */
import * as z from "zod";
import { ACP_HANDSHAKE_TIMEOUT_MS, ACP_STDERR_KEEP_BYTES } from "../limits.ts";
import { errorName, type Logger } from "../log.ts";
import { AcpFault, RPC, RpcConnection, RpcError, type RpcHandlers } from "./jsonrpc.ts";
import type { RunnerSpec } from "./runners.ts";

/** The ACP protocol version this client speaks. */
export const ACP_PROTOCOL_VERSION = 1;

// What our side sends: fixed shapes, strict.
export const InitializeParams = z.object({
  protocolVersion: z.literal(ACP_PROTOCOL_VERSION),
  clientCapabilities: z.object({
    fs: z.object({ readTextFile: z.literal(true), writeTextFile: z.literal(true) }).strict(),
    terminal: z.literal(false),
  }).strict(),
  clientInfo: z.object({ name: z.string(), version: z.string() }).strict(),
}).strict();

// What the peer answers: validated, unknown members dropped.
const InitializeResult = z.object({
  protocolVersion: z.number().int(),
  agentCapabilities: z.object({
    mcpCapabilities: z.object({ http: z.boolean().optional() }).optional(),
  }).optional(),
});
const NewSessionResult = z.object({ sessionId: z.string().min(1).max(256) });

/** Where a Turn receives what its runner sends. */
export interface TurnPort {
  sessionId: string;
  notification(method: string, params: unknown): void;
  request(method: string, params: unknown): Promise<unknown>;
}

export class RunnerProcess {
  readonly conn: RpcConnection;
  readonly exited: Promise<Deno.CommandStatus>;
  /** Whether the runner accepts Streamable-HTTP MCP servers in `session/new`. */
  mcpHttp = false;
  sessions = 0;
  #turn: TurnPort | null = null;
  #stderr = "";
  #reaped: Promise<void> | null = null;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;

  private constructor(
    readonly spec: RunnerSpec,
    private readonly child: Deno.ChildProcess,
    private readonly log: Logger,
  ) {
    const stdin = child.stdin.getWriter();
    this.#stdin = stdin;
    const handlers: RpcHandlers = {
      notification: (method, params) => {
        this.#turn?.notification(method, params);
      },
      request: (method, params) => {
        const t = this.#turn;
        if (!t) return Promise.reject(new RpcError(RPC.refused, "no Turn is running"));
        return t.request(method, params);
      },
    };
    this.conn = new RpcConnection({
      readable: child.stdout,
      write: (b) => stdin.write(b),
      handlers,
    });
    this.exited = child.status;
    // A process that exits ends the connection even if its stdout stays open elsewhere.
    this.exited.then(() => this.conn.close(new AcpFault("runner_crashed", "process exited")));
    this.#drainStderr(child.stderr).catch(() => undefined);
  }

  /** Spawns the runner in `cwd` and completes `initialize`; throws AcpFault. */
  static async start(
    spec: RunnerSpec,
    cwd: string,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<RunnerProcess> {
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(spec.argv[0], {
        args: spec.argv.slice(1),
        cwd,
        // SECURITY: nothing of the Control Plane's environment reaches the runner.
        clearEnv: true,
        env: spec.env,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (err) {
      throw new AcpFault("runner_start_failed", errorName(err));
    }
    const p = new RunnerProcess(spec, child, log);
    try {
      const params = InitializeParams.parse({
        protocolVersion: ACP_PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
        clientInfo: { name: "agent-builder", version: "0.2" },
      });
      // The Run's cancel or deadline cuts the handshake too (the process is reaped below).
      const raw = await p.conn.request("initialize", params, {
        timeoutMs: ACP_HANDSHAKE_TIMEOUT_MS,
        signal,
      });
      const r = InitializeResult.safeParse(raw);
      if (!r.success || r.data.protocolVersion !== ACP_PROTOCOL_VERSION) {
        throw new AcpFault("runner_start_failed", "initialize answer refused");
      }
      p.mcpHttp = r.data.agentCapabilities?.mcpCapabilities?.http === true;
      return p;
    } catch (err) {
      await p.reap(0);
      if (err instanceof AcpFault) {
        throw err.code === "runner_start_failed" ? err : new AcpFault(
          "runner_start_failed",
          err.code,
        );
      }
      if (err instanceof RpcError) throw new AcpFault("runner_start_failed", "initialize error");
      throw err;
    }
  }

  get alive(): boolean {
    return this.conn.fault === null;
  }

  /** `session/new` in `cwd` with the given MCP servers; returns the session id. */
  async newSession(cwd: string, mcpServers: unknown[], signal: AbortSignal): Promise<string> {
    const raw = await this.conn.request("session/new", { cwd, mcpServers }, {
      timeoutMs: ACP_HANDSHAKE_TIMEOUT_MS,
      signal,
    });
    const r = NewSessionResult.safeParse(raw);
    if (!r.success) {
      this.conn.close(new AcpFault("runner_protocol_error", "session/new answer"));
      throw this.conn.fault;
    }
    this.sessions++;
    return r.data.sessionId;
  }

  /** Routes the runner's traffic to `t` until `detach`. */
  attach(t: TurnPort): void {
    this.#turn = t;
  }

  detach(): void {
    this.#turn = null;
  }

  /** The first bytes of the runner's stderr (for the log only). */
  get stderrHead(): string {
    return this.#stderr;
  }

  /** Ends the process: SIGTERM, SIGKILL after `graceMs`, then waits for it. Idempotent. */
  reap(graceMs: number): Promise<void> {
    if (this.#reaped) return this.#reaped;
    this.conn.close(new AcpFault("runner_crashed", "reaped"));
    this.#reaped = (async () => {
      const signal = (s: Deno.Signal) => {
        try {
          this.child.kill(s);
        } catch (err) {
          // Already exited: nothing to signal.
          if (!(err instanceof TypeError)) throw err;
        }
      };
      let t: ReturnType<typeof setTimeout> | undefined;
      const ended = await Promise.race([
        this.exited.then(() => true),
        new Promise<false>((res) => {
          signal("SIGTERM");
          t = setTimeout(() => res(false), graceMs);
        }),
      ]);
      clearTimeout(t);
      if (!ended) signal("SIGKILL");
      await this.exited;
      await this.#stdin.abort().catch(() => undefined);
      if (this.#stderr) {
        this.log.info("acp.runner_stderr", { runner: this.spec.name, head: this.#stderr });
      }
    })();
    return this.#reaped;
  }

  async #drainStderr(s: ReadableStream<Uint8Array>): Promise<void> {
    const dec = new TextDecoder();
    for await (const chunk of s) {
      if (this.#stderr.length < ACP_STDERR_KEEP_BYTES) {
        this.#stderr += dec.decode(chunk, { stream: true }).slice(0, ACP_STDERR_KEEP_BYTES);
      }
    }
  }
}
