/**
 * Ollama's wire format as the broker reads and writes it: response schemas for
 * `/api/version`, `/api/show`, streamed `/api/chat` frames and error bodies,
 * and the one request body builder.
 *
 * What this file enforces: every field the broker uses is type-checked (tool
 * arguments must be JSON objects, counts non-negative integers); provider
 * frames may carry extra fields (Ollama adds them between versions) which are
 * dropped, never forwarded. The overflow classifier accepts only a strict
 * single-field `{"error": string}` body [MB-8]. The request body is built only
 * from the trusted catalog entry, the qualified profile and the compiled
 * projection — no caller-supplied options exist [MB-1, MB-3].
 */
import { z } from "zod";
import type { CatalogEntry } from "./catalog.ts";
import type { ChatMessage, ChatPhase, ProviderTool, QualifiedProfile } from "./types.ts";

export const VersionSchema = z.object({ version: z.string().min(1).max(64) });

export const ShowSchema = z.object({
  capabilities: z.array(z.string().max(64)).max(64).optional(),
  details: z.object({
    family: z.string().max(256).optional(),
    parameter_size: z.string().max(256).optional(),
    quantization_level: z.string().max(256).optional(),
  }).optional(),
  model_info: z.record(z.string(), z.unknown()),
});

/** `/api/tags`: only the names are read (sizes, digests and paths are never kept). */
export const TagsSchema = z.object({
  models: z.array(z.object({
    name: z.string().max(1024).optional(),
    model: z.string().max(1024).optional(),
  })).max(100_000),
});

/** One `/api/pull` progress line [MB-13]. */
export const PullLineSchema = z.object({
  status: z.string().max(4096).optional(),
  total: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  completed: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  error: z.string().max(65536).optional(),
});

const ToolCallWire = z.object({
  id: z.string().min(1).max(128).optional(),
  function: z.object({
    index: z.number().int().nonnegative().optional(),
    name: z.string().min(1).max(128),
    arguments: z.record(z.string(), z.unknown()),
  }),
});

const Count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export const FrameSchema = z.object({
  model: z.string().max(256).optional(),
  created_at: z.string().max(64).optional(),
  message: z.object({
    role: z.literal("assistant"),
    content: z.string().optional(),
    thinking: z.string().optional(),
    tool_calls: z.array(ToolCallWire).max(64).optional(),
  }).optional(),
  done: z.boolean(),
  done_reason: z.string().max(64).optional(),
  prompt_eval_count: Count.optional(),
  eval_count: Count.optional(),
});
export type Frame = z.infer<typeof FrameSchema>;

export const InBandErrorSchema = z.object({ error: z.string().max(4096) }).strict();

/** Exact messages Ollama (and llama.cpp runners) use for context/media overflow. */
const OVERFLOW_PATTERNS: readonly RegExp[] = [
  /^the input length exceeds the context length$/,
  /^input length exceeds (?:the )?(?:maximum )?context length/,
  /^prompt is too long/,
  /^(?:image|media) (?:input )?(?:is )?too large/,
  /exceeds the (?:maximum )?context (?:length|window)/,
];

/** True only for a 400/413 strict `{"error": "<overflow text>"}` body [MB-8]. */
export function isOverflowBody(status: number, body: string): boolean {
  if (status !== 400 && status !== 413) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return false; // not strict JSON ⇒ never an overflow
  }
  const r = InBandErrorSchema.safeParse(parsed);
  if (!r.success) return false;
  return OVERFLOW_PATTERNS.some((p) => p.test(r.data.error));
}

/** A 400 naming a missing capability, e.g. `"qwen" does not support tools`. */
export function isCapabilityBody(status: number, body: string): boolean {
  if (status !== 400) return false;
  try {
    const r = InBandErrorSchema.safeParse(JSON.parse(body));
    return r.success && /does not support (?:tools|chat|completion|thinking|vision|insert)/.test(
      r.data.error,
    );
  } catch {
    return false;
  }
}

/** Compares dotted versions numerically (`0.12.6` ≥ `0.12.10` is false). Non-numeric parts ⇒ 0. */
export function versionAtLeast(version: string, min: string): boolean {
  const a = version.replace(/^v/, "").split(/[.+-]/).slice(0, 3).map((x) => parseInt(x, 10) || 0);
  const b = min.split(".").map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

/** The exact `/api/chat` body for one call. Keys in a fixed order (digest stability). */
export function chatBody(
  entry: CatalogEntry,
  profile: QualifiedProfile,
  phase: ChatPhase,
  messages: readonly ChatMessage[],
  tools: readonly ProviderTool[] | undefined,
  think: boolean | undefined,
): Record<string, unknown> {
  const policy = phase === "plain" ? entry.plain : entry.tools;
  // A chat_only model never gets tools [MB-10].
  const withTools = phase === "tools" && profile.capabilities.tools && tools && tools.length > 0;
  return {
    model: entry.providerModel,
    messages: messages.map(wireMessage),
    ...(withTools ? { tools: tools.map(wireTool) } : {}),
    stream: true,
    // `think` only for models that report the capability [MB-12] (others would refuse it).
    ...(think !== undefined && profile.capabilities.thinking ? { think } : {}),
    ...(profile.truncateSupported ? { truncate: false } : {}),
    keep_alive: entry.keepAliveS,
    options: { ...policy, num_ctx: profile.window, num_predict: profile.reserve },
  };
}

/** Rebuilt field by field: nothing beyond the tool schema itself reaches the provider. */
function wireTool(t: ProviderTool): Record<string, unknown> {
  const f = t.function;
  return {
    type: "function",
    function: { name: f.name, description: f.description, parameters: f.parameters },
  };
}

function wireMessage(m: ChatMessage): Record<string, unknown> {
  switch (m.role) {
    case "system":
    case "user":
      return { role: m.role, content: m.content };
    case "assistant":
      return m.tool_calls && m.tool_calls.length > 0
        ? {
          role: "assistant",
          content: m.content,
          tool_calls: m.tool_calls.map((c) => ({
            id: c.id,
            function: { name: c.name, arguments: c.arguments },
          })),
        }
        : { role: "assistant", content: m.content };
    case "tool":
      return {
        role: "tool",
        content: m.content,
        tool_call_id: m.tool_call_id,
        tool_name: m.tool_name,
      };
    default: {
      const never: never = m;
      throw new Error(`unknown role ${(never as { role: string }).role}`);
    }
  }
}
