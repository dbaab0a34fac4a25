/**
 * The MCP client over Streamable HTTP [LC-5]: `initialize`,
 * `notifications/initialized`, `tools/list` and `tools/call`, each answered
 * as one JSON body or as an SSE stream.
 *
 * What this file enforces: every message that leaves is ≤ 64 KiB and every
 * answer read is ≤ 256 KiB (an endless SSE stream is cut at that bound or at
 * the deadline); one operation (a fresh session: initialize, initialized,
 * the request) runs under ONE 10 s deadline; answers are parsed with zod at
 * this boundary — a body that is not JSON, not JSON-RPC 2.0, answers another
 * id, or a result of the wrong shape is `mcp_protocol_error`; a JSON-RPC
 * error is `mcp_server_error`; unknown fields of results are dropped; server
 * requests and notifications on the stream are ignored (the client declares
 * no capabilities). All traffic goes through `pinnedPost` (pinned address,
 * no redirects, TLS verified).
 */
import { z } from "zod";
import type { ErrorCode } from "../errors.ts";
import { MCP_CALL_TIMEOUT_MS, MCP_LIST_PAGES_MAX, MCP_RESPONSE_MAX_BYTES } from "../limits.ts";
import { concatBytes } from "../protocol/bytes.ts";
import { LineSplitter } from "../protocol/line_splitter.ts";
import { type BodyReader, McpWireError, pinnedPost } from "./http1.ts";
import type { PinnedServer } from "./net_rules.ts";

export type Fail = { ok: false; code: ErrorCode };

/** What the client needs to reach one server. */
export interface McpEndpoint {
  pinned: PinnedServer;
  /** Extra PEM CA certificates for this server. */
  caCerts?: string[];
}

export const CLIENT_PROTOCOL_VERSION = "2025-06-18";
const ACCEPTED_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"];

const IdSchema = z.union([z.number().int(), z.string().max(128)]);
const RpcResponseSchema = z.union([
  z.object({ jsonrpc: z.literal("2.0"), id: IdSchema, result: z.record(z.string(), z.unknown()) })
    .strict(),
  z.object({
    jsonrpc: z.literal("2.0"),
    id: IdSchema.nullable(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() })
      .strict(),
  }).strict(),
]);
/** Requests and notifications the server may interleave on an SSE stream (ignored). */
const RpcOtherSchema = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.string(),
  id: IdSchema.optional(),
  params: z.unknown().optional(),
}).strict();

const InitializeResultSchema = z.object({
  protocolVersion: z.string().max(32),
  capabilities: z.record(z.string(), z.unknown()),
  serverInfo: z.object({ name: z.string(), version: z.string() }),
});

/** One tool as listed; only what this product reads, the rest dropped. */
export const ListedToolSchema = z.object({
  name: z.string().max(1024),
  description: z.string().max(65536).optional(),
  inputSchema: z.record(z.string(), z.unknown()),
});
export type ListedTool = z.infer<typeof ListedToolSchema>;

const ToolsListResultSchema = z.object({
  tools: z.array(z.unknown()).max(1024),
  nextCursor: z.string().max(1024).optional(),
});

const ContentSchema = z.object({ type: z.string().max(64), text: z.string().optional() });
const CallResultSchema = z.object({
  content: z.array(ContentSchema).max(1024),
  isError: z.boolean().optional(),
});
export type CallResult = z.infer<typeof CallResultSchema>;

interface Session {
  id?: string;
  version?: string;
  deadline: number;
  signal?: AbortSignal;
  nextId: number;
}

function rpcHeaders(s: Session): Record<string, string> {
  const h: Record<string, string> = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
  };
  if (s.id) h["Mcp-Session-Id"] = s.id;
  if (s.version) h["MCP-Protocol-Version"] = s.version;
  return h;
}

/** Reads the body up to MCP_RESPONSE_MAX_BYTES; past it `mcp_response_too_large`. */
async function readAll(body: BodyReader): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const p = await body.next();
    if (p === null) break;
    n += p.length;
    if (n > MCP_RESPONSE_MAX_BYTES) throw new McpWireError("mcp_response_too_large");
    parts.push(p);
  }
  return concatBytes(parts, n);
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new McpWireError("mcp_protocol_error");
  }
}

function parseJson(bytes: Uint8Array | string): unknown {
  const text = typeof bytes === "string" ? bytes : decodeUtf8(bytes);
  try {
    return JSON.parse(text);
  } catch {
    throw new McpWireError("mcp_protocol_error");
  }
}

/** Our answer among the messages of one body: the response to `id`. */
function answerOf(msg: unknown, id: number): Record<string, unknown> | "other" {
  const r = RpcResponseSchema.safeParse(msg);
  if (r.success) {
    if (r.data.id !== id) throw new McpWireError("mcp_protocol_error");
    if ("error" in r.data) throw new McpWireError("mcp_server_error");
    return r.data.result;
  }
  if (RpcOtherSchema.safeParse(msg).success) return "other";
  throw new McpWireError("mcp_protocol_error");
}

/** Reads SSE events until the response to `id`, within the byte bound. */
async function readSse(body: BodyReader, id: number): Promise<Record<string, unknown>> {
  // The byte bound of the whole answer also bounds each line: a line never outgrows the splitter.
  const lines = new LineSplitter(MCP_RESPONSE_MAX_BYTES);
  let n = 0;
  let data: string[] = [];
  for (;;) {
    const p = await body.next();
    if (p === null) throw new McpWireError("mcp_protocol_error"); // stream ended unanswered
    n += p.length;
    if (n > MCP_RESPONSE_MAX_BYTES) throw new McpWireError("mcp_response_too_large");
    for (const raw of lines.push(p)) {
      // A newline byte never sits inside a UTF-8 sequence, so each line decodes on its own.
      const line = decodeUtf8(raw).replace(/\r$/, "");
      if (line === "") {
        if (data.length > 0) {
          const a = answerOf(parseJson(data.join("\n")), id);
          data = [];
          if (a !== "other") return a;
        }
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      } // event:, id:, retry: and comments carry nothing we use
    }
  }
}

/** One JSON-RPC exchange inside a session; a notification (no id) expects 202. */
async function exchange(
  ep: McpEndpoint,
  s: Session,
  method: string,
  params: Record<string, unknown>,
  notify = false,
): Promise<Record<string, unknown>> {
  const id = s.nextId++;
  const msg = notify ? { jsonrpc: "2.0", method, params } : { jsonrpc: "2.0", id, method, params };
  const body = new TextEncoder().encode(JSON.stringify(msg));
  const r = await pinnedPost(ep.pinned, {
    headers: rpcHeaders(s),
    body,
    deadline: s.deadline,
    signal: s.signal,
    caCerts: ep.caCerts,
  });
  if (!r.ok) throw new McpWireError(r.code);
  try {
    const { status, headers } = r.res;
    if (notify) {
      if (status !== 202 && status !== 200 && status !== 204) {
        throw new McpWireError("mcp_http_error");
      }
      return {};
    }
    if (status !== 200) throw new McpWireError("mcp_http_error");
    const sid = headers.get("mcp-session-id");
    if (sid !== undefined) {
      if (!/^[\x21-\x7e]{1,256}$/.test(sid)) throw new McpWireError("mcp_protocol_error");
      if (method === "initialize") s.id = sid;
    }
    const ct = (headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (ct === "application/json") {
      const a = answerOf(parseJson(await readAll(r.res.body)), id);
      if (a === "other") throw new McpWireError("mcp_protocol_error");
      return a;
    }
    if (ct === "text/event-stream") return await readSse(r.res.body, id);
    throw new McpWireError("mcp_protocol_error");
  } finally {
    r.close();
  }
}

/** Runs `fn` in a fresh session under one deadline; every failure is its fixed code. */
async function withSession<T>(
  ep: McpEndpoint,
  signal: AbortSignal | undefined,
  fn: (s: Session) => Promise<T>,
): Promise<{ ok: true; value: T } | Fail> {
  const s: Session = { deadline: performance.now() + MCP_CALL_TIMEOUT_MS, signal, nextId: 1 };
  try {
    const init = InitializeResultSchema.safeParse(
      await exchange(ep, s, "initialize", {
        protocolVersion: CLIENT_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: "agent-builder", version: "0.2" },
      }),
    );
    if (!init.success || !ACCEPTED_VERSIONS.includes(init.data.protocolVersion)) {
      return { ok: false, code: "mcp_protocol_error" };
    }
    s.version = init.data.protocolVersion;
    await exchange(ep, s, "notifications/initialized", {}, true);
    return { ok: true, value: await fn(s) };
  } catch (e) {
    if (e instanceof McpWireError) {
      const late = performance.now() >= s.deadline && e.code === "mcp_unreachable";
      return { ok: false, code: late ? "mcp_timeout" : e.code };
    }
    return { ok: false, code: "mcp_protocol_error" };
  }
}

/**
 * Discovery: the server's tools (raw entries, at most MCP_LIST_PAGES_MAX
 * pages); each entry is checked by the caller's mapping, not here, so one
 * bad tool is refused alone.
 */
export function listTools(
  ep: McpEndpoint,
  signal?: AbortSignal,
): Promise<{ ok: true; value: { tools: unknown[]; more: boolean } } | Fail> {
  return withSession(ep, signal, async (s) => {
    const tools: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MCP_LIST_PAGES_MAX; page++) {
      const r = ToolsListResultSchema.safeParse(
        await exchange(ep, s, "tools/list", cursor === undefined ? {} : { cursor }),
      );
      if (!r.success) throw new McpWireError("mcp_protocol_error");
      tools.push(...r.data.tools);
      cursor = r.data.nextCursor;
      if (cursor === undefined) return { tools, more: false };
    }
    return { tools, more: true };
  });
}

/** One tools/call; the result's content as the server gave it (validated shape). */
export function callTool(
  ep: McpEndpoint,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ ok: true; value: CallResult } | Fail> {
  return withSession(ep, signal, async (s) => {
    const r = CallResultSchema.safeParse(
      await exchange(ep, s, "tools/call", { name, arguments: args }),
    );
    if (!r.success) throw new McpWireError("mcp_protocol_error");
    return r.data;
  });
}
