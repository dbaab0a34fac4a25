/**
 * Extension tool ids [LC-5]: `mcp/<server>/<tool>` passes the protocol's
 * ToolIdSchema and the sealed catalog, maps to the Ollama name
 * `mcp__<server>__<tool>` and back exactly, and nothing else maps to it.
 */
import { assertEquals } from "../helpers/assert.ts";
import { ToolIdSchema } from "../../runtime/protocol/worker_frames.ts";
import {
  BUILTIN_TOOL_SPECS,
  providerToolName,
  sealCatalog,
  toolIdFromProviderName,
} from "../../runtime/tools/catalog.ts";
import { mapTools, parseMcpToolId } from "../../runtime/extensions/tool_map.ts";
import { ToolsetRefSchema } from "../../runtime/protocol/worker_frames.ts";
import {
  MCP_SERVERS_MAX,
  MCP_TOOLS_PER_SERVER_MAX,
  TOOLSET_TOOLS_MAX,
} from "../../runtime/limits.ts";

Deno.test("mcp tool ids round-trip through the provider name; built-in names are unchanged", () => {
  for (const id of ["mcp/friendly/echo", "mcp/a-b/Tool_x-1", "mcp/s/a__b", "file/read_text"]) {
    assertEquals(ToolIdSchema.safeParse(id).success, true, id);
    assertEquals(toolIdFromProviderName(providerToolName(id)), id);
  }
  assertEquals(providerToolName("mcp/friendly/echo"), "mcp__friendly__echo");
  assertEquals(providerToolName("file/read_text"), "file__read_text");
  assertEquals(parseMcpToolId("mcp/friendly/echo"), { server: "friendly", tool: "echo" });
  for (const bad of ["mcp/Upper/x", "mcp/x/bad.name", "mcp/x/", "mcp/toolongservername1/x"]) {
    assertEquals(ToolIdSchema.safeParse(bad).success, false, bad);
    assertEquals(parseMcpToolId(bad), null, bad);
  }
  assertEquals(toolIdFromProviderName("mcp__Bad__x"), null);
});

Deno.test("mapped MCP specs seal into a catalog beside the built-ins", () => {
  const m = mapTools("friendly", [{
    name: "search",
    description: "Search.",
    inputSchema: {
      type: "object",
      properties: {
        query: { type: "string", maxLength: 100 },
        limit: { type: "integer", minimum: 1, maximum: 50 },
        exact: { type: "boolean" },
        tags: { type: "array", items: { type: "string" }, maxItems: 8 },
      },
      required: ["query"],
    },
  }], false);
  const cat = sealCatalog([...BUILTIN_TOOL_SPECS, ...m.offered.map((t) => t.spec)]);
  const spec = cat.get("mcp/friendly/search")!;
  assertEquals(spec.default_policy, "ask");
  assertEquals(spec.args.query, {
    type: "string",
    description: "",
    required: true,
    max_bytes: 400,
  });
  assertEquals(spec.args.tags, {
    type: "string_array",
    description: "",
    required: false,
    max_items: 8,
    item_max_bytes: 4096,
  });
});

Deno.test("a toolset of the built-ins and 8 servers x 32 tools seals and fits the snapshot; one id more does not", () => {
  const specs = [...BUILTIN_TOOL_SPECS];
  for (let srv = 0; srv < MCP_SERVERS_MAX; srv++) {
    const listed = Array.from({ length: MCP_TOOLS_PER_SERVER_MAX }, (_, i) => ({
      name: `tool_${i}`,
      inputSchema: { type: "object", properties: {} },
    }));
    specs.push(...mapTools(`s${srv}`, listed, false).offered.map((t) => t.spec));
  }
  const cat = sealCatalog(specs);
  assertEquals(cat.specs.length, BUILTIN_TOOL_SPECS.length + 256);
  const ref = (ids: string[]) =>
    ToolsetRefSchema.safeParse({
      id: "00000000-0000-4000-8000-000000000001",
      digest: `sha256:${"0".repeat(64)}`,
      tool_ids: ids,
    }).success;
  const ids = cat.specs.map((s) => s.id);
  assertEquals(ref(ids), true);
  const full = Array.from({ length: TOOLSET_TOOLS_MAX }, (_, i) => `mcp/x/t${i}`);
  assertEquals(ref(full), true);
  assertEquals(ref([...full, "mcp/x/one_more"]), false);
});
