/**
 * The one owner of the configured MCP servers [LC-5]: the operator's set
 * (`serve --mcp NAME=URL`, then the API), their discovery state, pinned
 * addresses and mapped tools, each Agent's enabled servers, and the calls.
 *
 * What this file enforces: at most MCP_SERVERS_MAX servers, names
 * `[a-z][a-z0-9-]{0,15}`, URLs checked by net_rules before anything is
 * stored; a server's address is resolved once, at its first discovery, and
 * pinned for the life of the process (a refresh lists tools again at the
 * same address); API-added servers persist, CLI servers are the flags of
 * this process; per-Agent enablement persists and defaults to none; a call
 * goes only to a tool the latest discovery offered, of a ready server, with
 * the server's own tool name; a result's text is bounded.
 */
import { z } from "zod";
import { AppError, type ErrorCode } from "../errors.ts";
import { MCP_RESULT_TEXT_MAX_BYTES, MCP_SERVERS_MAX, MCP_TOOLS_PER_SERVER_MAX } from "../limits.ts";
import type { Logger } from "../log.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import {
  deleteExtensionRow,
  enabledExtensions,
  insertExtensionRow,
  listExtensionRows,
  setEnabledExtensions,
} from "../store/extension_store.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import { callTool, listTools, type McpEndpoint } from "./mcp_client.ts";
import {
  parseServerUrl,
  type PinnedServer,
  pinServer,
  type Resolver,
  type ServerUrl,
  systemResolver,
} from "./net_rules.ts";
import {
  canonicalMcpResult,
  mapTools,
  type OfferedTool,
  parseMcpToolId,
  type RefusedTool,
  SERVER_NAME_RE,
} from "./tool_map.ts";

export const ExtensionNameSchema = z.string().regex(SERVER_NAME_RE);
export const AddExtensionBody = z.object({
  name: ExtensionNameSchema,
  url: z.string().min(1).max(2048),
  /** Extra PEM CA certificate(s) this server's TLS may chain to. */
  ca_pem: z.string().max(16384).optional(),
}).strict();
export type AddExtensionBody = z.infer<typeof AddExtensionBody>;
export const EnabledBody = z.object({
  enabled: z.array(ExtensionNameSchema).max(MCP_SERVERS_MAX),
}).strict();
export type EnabledBody = z.infer<typeof EnabledBody>;

// What the API and the UI show of one server: the schema is the API contract's.
export { type ExtensionView, ExtensionViewSchema } from "../protocol/api.ts";
import type { ExtensionView } from "../protocol/api.ts";

interface Entry {
  name: string;
  url: ServerUrl;
  rawUrl: string;
  source: "cli" | "api";
  caCerts: string[];
  pinned: PinnedServer | null;
  state: "discovering" | "ready" | "error";
  code: ErrorCode | null;
  offered: OfferedTool[];
  refused: RefusedTool[];
  discoveredAt: number | null;
  /** The discovery in flight (one at a time per server). */
  inflight: Promise<void> | null;
}

export interface ExtensionServiceOptions {
  registryDb: DatabaseSync;
  /** `--mcp-allow-ip`: exact IP literals (canonical). */
  allowIps: readonly string[];
  /** `--mcp NAME=URL` (with its `--mcp-ca` PEM), already validated. */
  cli: readonly { name: string; url: string; ca?: string }[];
  log: Logger;
  resolver?: Resolver;
  now?: () => number;
}

export type McpCallResult = { ok: true; text: string } | { ok: false; code: ErrorCode };

export type ExtensionService = ReturnType<typeof createExtensionService>;

/** Parses one `--mcp NAME=URL` value; throws a message for the usage error. */
export function parseMcpFlag(
  v: string,
  allowIps: readonly string[],
): { name: string; url: string } {
  const i = v.indexOf("=");
  const name = i > 0 ? v.slice(0, i) : "";
  const url = v.slice(i + 1);
  if (!SERVER_NAME_RE.test(name)) {
    throw new Error("--mcp needs NAME=URL, NAME [a-z][a-z0-9-]{0,15}");
  }
  const u = parseServerUrl(url, allowIps);
  if ("ok" in u) throw new Error(`--mcp ${name}: ${u.code}`);
  return { name, url };
}

export function createExtensionService(opts: ExtensionServiceOptions) {
  const now = opts.now ?? Date.now;
  const resolver = opts.resolver ?? systemResolver;
  const entries = new Map<string, Entry>();

  function entryOf(name: string, rawUrl: string, source: Entry["source"], ca: string | null) {
    const u = parseServerUrl(rawUrl, opts.allowIps);
    if ("ok" in u) throw new AppError(u.code);
    const e: Entry = {
      name,
      url: u,
      rawUrl,
      source,
      caCerts: ca ? [ca] : [],
      pinned: null,
      state: "discovering",
      code: null,
      offered: [],
      refused: [],
      discoveredAt: null,
      inflight: null,
    };
    return e;
  }

  for (const c of opts.cli.slice(0, MCP_SERVERS_MAX)) {
    entries.set(c.name, entryOf(c.name, c.url, "cli", c.ca ?? null));
  }
  for (const r of listExtensionRows(opts.registryDb)) {
    if (entries.has(r.name) || entries.size >= MCP_SERVERS_MAX) continue;
    try {
      entries.set(r.name, entryOf(r.name, r.url, "api", r.ca_pem));
    } catch (err) {
      // The allowlist of this start may no longer admit a stored URL: skip it, loudly.
      if (!(err instanceof AppError)) throw err;
      opts.log.warn("extension.refused", { name: r.name, code: err.code });
    }
  }

  function endpoint(e: Entry): McpEndpoint | null {
    return e.pinned ? { pinned: e.pinned, caCerts: e.caCerts } : null;
  }

  async function discoverNow(e: Entry): Promise<void> {
    e.state = "discovering";
    if (!e.pinned) {
      const p = await pinServer(e.url, opts.allowIps, resolver);
      if (!p.ok) {
        e.state = "error";
        e.code = p.code;
        return;
      }
      e.pinned = p.pinned;
    }
    const l = await listTools(endpoint(e)!);
    if (entries.get(e.name) !== e) return; // removed meanwhile
    if (!l.ok) {
      e.state = "error";
      e.code = l.code;
      e.offered = [];
      e.refused = [];
      opts.log.info("extension.discovery_failed", { name: e.name, code: l.code });
      return;
    }
    const m = mapTools(e.name, l.value.tools, l.value.more);
    e.offered = m.offered;
    e.refused = m.refused;
    e.state = "ready";
    e.code = null;
    e.discoveredAt = now();
    opts.log.info("extension.discovered", {
      name: e.name,
      offered: m.offered.length,
      refused: m.refused.length,
    });
  }

  function discover(e: Entry): Promise<void> {
    if (!e.inflight) {
      e.inflight = discoverNow(e).finally(() => {
        e.inflight = null;
      });
    }
    return e.inflight;
  }

  function view(e: Entry): ExtensionView {
    return {
      name: e.name,
      url: e.rawUrl,
      source: e.source,
      state: e.state,
      code: e.code,
      address: e.pinned?.address ?? null,
      tools: e.offered.map((t) => ({
        id: t.spec.id,
        name: t.name,
        description: t.description,
        args: Object.keys(t.spec.args),
        policy: "ask" as const,
      })),
      refused: e.refused,
      discovered_at: e.discoveredAt,
    };
  }

  function get(name: string): Entry {
    const e = entries.get(name);
    if (!e) throw new AppError("extension_not_found");
    return e;
  }

  return {
    /** Starts discovery of every configured server (background). */
    start(): void {
      for (const e of entries.values()) void discover(e);
    },
    list(): ExtensionView[] {
      return [...entries.values()].map(view);
    },
    get(name: string): ExtensionView {
      return view(get(name));
    },
    /** Adds (and persists) a server, then discovers it; the view after discovery. */
    async add(body: AddExtensionBody): Promise<ExtensionView> {
      if (entries.has(body.name)) throw new AppError("extension_exists");
      if (entries.size >= MCP_SERVERS_MAX) throw new AppError("extension_limit");
      if (body.ca_pem !== undefined && !/-----BEGIN CERTIFICATE-----/.test(body.ca_pem)) {
        throw new AppError("schema_violation");
      }
      const e = entryOf(body.name, body.url, "api", body.ca_pem ?? null);
      insertExtensionRow(opts.registryDb, {
        name: body.name,
        url: body.url,
        ca_pem: body.ca_pem ?? null,
        created_at: now(),
      });
      entries.set(e.name, e);
      await discover(e);
      return view(e);
    },
    /** Lists the server's tools again (same pinned address). */
    async refresh(name: string): Promise<ExtensionView> {
      const e = get(name);
      await discover(e);
      return view(e);
    },
    /** Removes a server for this process (and from the store when the API added it). */
    remove(name: string): void {
      get(name);
      deleteExtensionRow(opts.registryDb, name);
      entries.delete(name);
    },
    enabledFor(agentId: string): string[] {
      return enabledExtensions(opts.registryDb, agentId);
    },
    setEnabled(agentId: string, names: readonly string[]): string[] {
      const unique = [...new Set(names)];
      for (const n of unique) get(n);
      setEnabledExtensions(opts.registryDb, agentId, unique);
      return unique;
    },
    /** The ToolSpecs an Agent's Runs offer: ready, enabled servers' offered tools. */
    specsFor(agentId: string): ToolSpec[] {
      const out: ToolSpec[] = [];
      for (const n of enabledExtensions(opts.registryDb, agentId)) {
        const e = entries.get(n);
        if (!e || e.state !== "ready") continue;
        out.push(...e.offered.slice(0, MCP_TOOLS_PER_SERVER_MAX).map((t) => t.spec));
      }
      return out;
    },
    /** The operation-ledger executor identity of an MCP tool id. */
    executorOf(toolId: string): string {
      const p = parseMcpToolId(toolId);
      return p ? `mcp/${p.server}@${entries.get(p.server)?.pinned?.address ?? "-"}` : "mcp/-";
    },
    /** One tools/call; the canonical text-only result or a fixed code. */
    async call(toolId: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<
      McpCallResult
    > {
      const p = parseMcpToolId(toolId);
      const e = p ? entries.get(p.server) : undefined;
      const tool = e?.offered.find((t) => t.name === p!.tool);
      if (!p || !e || !tool || e.state !== "ready" || !e.pinned) {
        return { ok: false, code: "mcp_tool_refused" };
      }
      const r = await callTool(endpoint(e)!, tool.name, args, signal);
      if (!r.ok) return r;
      const text = canonicalMcpResult(e.name, tool.name, r.value);
      if (utf8Bytes(text) > MCP_RESULT_TEXT_MAX_BYTES) {
        return { ok: false, code: "mcp_response_too_large" };
      }
      return { ok: true, text };
    },
  };
}
