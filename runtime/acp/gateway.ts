/**
 * The scoped asset gateway of external runners [LC-6]: a loopback MCP
 * endpoint (Streamable HTTP, JSON answers) that exposes, to the one Run that
 * holds its token, only that Run's authorised workspace read tools.
 *
 * What this file enforces:
 * - it listens on 127.0.0.1 only, on a port of its own (never the product's
 *   gateway or its Unix socket); a request with an `Origin` header (a
 *   browser) or another Host is refused before anything else;
 * - every request names its Run in the path (`/mcp/<run id>`) and carries
 *   `Authorization: Bearer <token>`; the token is 32 random bytes minted per
 *   Run, kept only as its SHA-256, bound to that run id and Agent, valid until
 *   the Run's deadline and revoked at its terminal: a missing, unknown,
 *   expired, revoked or other Run's token is 401 `runner_token_refused`, and
 *   the handler does not run;
 * - the tools are the Run's EffectiveToolSet's `allow` read tools
 *   (file/stat, file/read_text, file/glob, file/grep) — never a mutation, an
 *   exec tool or an MCP extension; arguments are validated against the
 *   ToolSpec and run through the [TL-4] executors (workspace-relative paths
 *   only); a read's receipt joins the Run's receipts;
 * - bodies ≤ ACP_GATEWAY_BODY_MAX_BYTES, one JSON-RPC message each;
 * - every call writes an audit-lite row in the Run's database.
 */
import * as z from "zod";
import { ACP_GATEWAY_BODY_MAX_BYTES, ACP_GATEWAY_TOKENS_MAX } from "../limits.ts";
import { errorName, type Logger } from "../log.ts";
import { concatBytes } from "../protocol/bytes.ts";
import { executeReadToolOffLoop, READ_TOOL_EXECUTORS } from "../runs/tool_exec.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { insertRunnerAccess, type RunnerDecision } from "../store/runner_access_store.ts";
import type { ReadReceipt } from "../tools/file_read_text.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import {
  type CallFacts,
  callFacts,
  type Decided,
  type EffectiveToolSet,
  validateToolArgs,
} from "../tools/policy.ts";
import { domainDigest as hexDigest } from "../tools/text.ts";

/** What the gateway grants one Run. */
export interface GatewayGrant {
  runId: string;
  agentId: string;
  runner: string;
  /** Epoch ms; the token is refused from then on (the Run's deadline). */
  expiresAt: number;
  workspaceDir: string;
  toolset: EffectiveToolSet;
  db: DatabaseSync;
  receipts: Map<string, ReadReceipt>;
  /** The Agent's per-call decision as its policy is now [TL-9]; absent ⇒ the toolset's. */
  policy?: (facts: CallFacts) => Decided;
}

interface Entry extends GatewayGrant {
  hash: string;
}

const MCP_VERSIONS = ["2025-06-18", "2025-03-26", "2024-11-05"];
const Message = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.number().int(), z.string().max(128)]).optional(),
  method: z.string().min(1).max(128),
  params: z.record(z.string(), z.unknown()).optional(),
});
const RUN_PATH = /^\/mcp\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The MCP name of a product tool (`file/read_text` → `file_read_text`). */
export function mcpName(toolId: string): string {
  return toolId.replace("/", "_");
}

function inputSchema(spec: ToolSpec): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, a] of Object.entries(spec.args)) {
    if (a.required) required.push(name);
    properties[name] = a.type === "string"
      ? { type: "string", description: a.description }
      : a.type === "integer"
      ? { type: "integer", description: a.description, minimum: a.minimum, maximum: a.maximum }
      : a.type === "boolean"
      ? { type: "boolean", description: a.description }
      : { type: "array", items: { type: "string" }, description: a.description };
  }
  return { type: "object", properties, required, additionalProperties: false };
}

export class ScopedGateway {
  /** Token hash → grant. */
  readonly #tokens = new Map<string, Entry>();
  #server: Deno.HttpServer<Deno.NetAddr> | null = null;
  #port = 0;
  #starting: Promise<void> | null = null;

  constructor(private readonly log: Logger, private readonly now: () => number = Date.now) {}

  /** Mints this Run's token (starting the listener on first use). */
  async issue(g: GatewayGrant): Promise<{ token: string; url: string }> {
    await this.#start();
    this.#sweep();
    if (this.#tokens.size >= ACP_GATEWAY_TOKENS_MAX) throw new Error("gateway tokens exhausted");
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const token = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
      .replace(/=+$/, "");
    const hash = hexDigest("agent-builder/acp-run-token/v1", token);
    this.#tokens.set(hash, { ...g, hash });
    return { token, url: `http://127.0.0.1:${this.#port}/mcp/${g.runId}` };
  }

  /** Revokes a token (the Run's terminal). Idempotent. */
  revoke(token: string): void {
    this.#tokens.delete(hexDigest("agent-builder/acp-run-token/v1", token));
  }

  /** Live tokens (for tests and diagnostics). */
  get liveTokens(): number {
    this.#sweep();
    return this.#tokens.size;
  }

  async close(): Promise<void> {
    this.#tokens.clear();
    const s = this.#server;
    this.#server = null;
    if (s) await s.shutdown();
  }

  #sweep(): void {
    const t = this.now();
    for (const [h, e] of this.#tokens) if (t >= e.expiresAt) this.#tokens.delete(h);
  }

  #start(): Promise<void> {
    if (this.#starting) return this.#starting;
    this.#starting = new Promise((resolve) => {
      this.#server = Deno.serve({
        hostname: "127.0.0.1",
        port: 0,
        onListen: (a) => {
          this.#port = a.port;
          resolve();
        },
        onError: (err) => {
          this.log.error("acp.gateway_error", { kind: errorName(err) });
          return json(500, { error: "internal_error" });
        },
      }, (req) => this.#handle(req));
    });
    return this.#starting;
  }

  /** The grant of an active Run by id (for audit of refused tokens). */
  #grantOfRun(runId: string): Entry | null {
    for (const e of this.#tokens.values()) if (e.runId === runId) return e;
    return null;
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    // SECURITY: browsers send Origin; a runner's MCP client does not. DNS rebinding is refused
    // by the Host check (a rebound name is not 127.0.0.1:<port>).
    if (req.headers.has("origin")) return json(403, { error: "origin_forbidden" });
    if (req.headers.get("host") !== `127.0.0.1:${this.#port}`) {
      return json(403, { error: "host_forbidden" });
    }
    const m = RUN_PATH.exec(url.pathname);
    if (!m) return json(404, { error: "not_found" });
    const runId = m[1];
    if (req.method !== "POST") {
      return new Response(null, { status: 405, headers: { allow: "POST" } });
    }
    // SECURITY: deny when the header is missing; the token must be THIS Run's and live.
    const auth = req.headers.get("authorization") ?? "";
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : "";
    const hash = token ? hexDigest("agent-builder/acp-run-token/v1", token) : "";
    const e = hash ? this.#tokens.get(hash) : undefined;
    if (!e || e.runId !== runId || this.now() >= e.expiresAt) {
      const owner = this.#grantOfRun(runId);
      if (owner) this.#audit(owner, "mcp/auth", "token", "refused", "runner_token_refused");
      return json(401, { error: "runner_token_refused" });
    }
    const body = await readBounded(req, ACP_GATEWAY_BODY_MAX_BYTES);
    if (body === null) return json(413, { error: "body_too_large" });
    let raw: unknown;
    try {
      raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    } catch {
      return rpcError(null, -32700, "Parse error");
    }
    const msg = Message.safeParse(raw);
    if (!msg.success) return rpcError(null, -32600, "Invalid Request");
    const { id, method, params } = msg.data;
    if (id === undefined) return new Response(null, { status: 202 });
    switch (method) {
      case "initialize": {
        const asked = typeof params?.protocolVersion === "string" ? params.protocolVersion : "";
        return rpcResult(id, {
          protocolVersion: MCP_VERSIONS.includes(asked) ? asked : MCP_VERSIONS[0],
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: "agent-builder", version: "0.2" },
        });
      }
      case "ping":
        return rpcResult(id, {});
      case "tools/list":
        return rpcResult(id, {
          tools: this.#tools(e).map((s) => ({
            name: mcpName(s.id),
            description: s.description,
            inputSchema: inputSchema(s),
          })),
        });
      case "tools/call":
        return rpcResult(id, await this.#call(e, params ?? {}));
      default:
        return rpcError(id, -32601, "Method not found");
    }
  }

  /** This Run's authorised tools: `allow` read tools of its EffectiveToolSet. */
  #tools(e: Entry): ToolSpec[] {
    return e.toolset.tools
      .filter((t) => t.decision === "allow" && Object.hasOwn(READ_TOOL_EXECUTORS, t.spec.id))
      .map((t) => t.spec);
  }

  async #call(e: Entry, params: Record<string, unknown>) {
    const name = typeof params.name === "string" ? params.name.slice(0, 64) : "";
    const spec = this.#tools(e).find((s) => mcpName(s.id) === name);
    const args = params.arguments ?? {};
    const resource = `${name} ${
      typeof (args as { path?: unknown }).path === "string" ? (args as { path: string }).path : ""
    }`.trim();
    const fail = (code: string) => {
      this.#audit(e, "mcp/tools/call", resource, "refused", code);
      return { content: [{ type: "text", text: JSON.stringify({ error: code }) }], isError: true };
    };
    if (!spec) return fail("tool_denied");
    const check = validateToolArgs(spec, args);
    if (!check.ok) return fail("tool_invalid_arguments");
    // A path-scoped rule may narrow a read tool the Run was offered: only `allow` runs here.
    if (e.policy && e.policy(callFacts(spec, check.args)).decision !== "allow") {
      return fail("tool_denied");
    }
    // [PF-2] In a file-tool process: the loop only awaits the answer.
    const r = await executeReadToolOffLoop(spec, e.workspaceDir, check.args);
    if (!r.ok) return fail(r.code);
    if (r.receipt) e.receipts.set(r.receipt.path, r.receipt);
    this.#audit(e, "mcp/tools/call", resource, "allowed", null);
    return { content: [{ type: "text", text: r.text }], isError: false };
  }

  #audit(e: Entry, method: string, resource: string, d: RunnerDecision, code: string | null) {
    try {
      insertRunnerAccess(e.db, {
        runId: e.runId,
        runner: e.runner,
        callId: null,
        method,
        resource,
        decision: d,
        code,
        now: this.now(),
      });
    } catch (err) {
      // The Run may have ended and its database gone with its Agent: the refusal stands.
      this.log.warn("acp.gateway_audit_failed", { kind: errorName(err) });
    }
  }
}

/** The body, or null past `max` bytes (read no further than that). */
async function readBounded(req: Request, max: number): Promise<Uint8Array | null> {
  const declared = req.headers.get("content-length");
  if (declared !== null && !(Number(declared) <= max)) return null;
  if (!req.body) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.length;
    if (size > max) return null;
    parts.push(chunk);
  }
  return concatBytes(parts, size);
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

function rpcResult(id: number | string, result: unknown): Response {
  return json(200, { jsonrpc: "2.0", id, result });
}

function rpcError(id: number | string | null, code: number, message: string): Response {
  return json(200, { jsonrpc: "2.0", id, error: { code, message } });
}
