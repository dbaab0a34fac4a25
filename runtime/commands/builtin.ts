/**
 * The built-in slash commands [SC-1]: /status, /context [run_id],
 * /model [model_id], /compact, /permissions, /cancel [run_id], /clear and the
 * aliases /ctx, /perms, /stop. None of them creates a Turn or calls the model;
 * /model, /compact and /clear only return an effect the UI applies to the next
 * Turn (or to its own view).
 */
import { AppError } from "../errors.ts";
import type { CommandArgSpec, CommandLine, CommandSpec } from "./registry.ts";
import type { CommandPorts } from "./ports.ts";
import { projectionLines, runContextLines } from "./context_lines.ts";

/** A Run id argument; the description says what omitting it means for each command. */
function runIdArg(description: string): CommandArgSpec {
  return { name: "run_id", required: false, description, pattern: /^[A-Za-z0-9_-]{1,128}$/ };
}

const MODEL_ID_ARG: CommandArgSpec = {
  name: "model_id",
  required: false,
  description: "A model id from the catalog (omit to list the catalog).",
  // The catalog grammar [MB-10] (ASCII only, so 256 characters are 256 bytes).
  pattern:
    /^(?=[^]{1,256}$)[a-z0-9][a-z0-9._-]*(?:\/[a-z0-9][a-z0-9._-]*){0,2}(?::[A-Za-z0-9._-]+)?$/,
};

/** Flattens a JSON object into label/value lines (two levels, scalars only). */
export function factLines(obj: Record<string, unknown>, prefix = "", depth = 0): CommandLine[] {
  const out: CommandLine[] = [];
  for (const [k, v] of Object.entries(obj)) {
    const label = prefix ? `${prefix}.${k}` : k;
    if (v === null || ["string", "number", "boolean"].includes(typeof v)) {
      out.push({ label, value: String(v) });
    } else if (Array.isArray(v)) {
      out.push({ label, value: `${v.length} item${v.length === 1 ? "" : "s"}` });
    } else if (typeof v === "object" && depth < 1) {
      out.push(...factLines(v as Record<string, unknown>, label, depth + 1));
    }
  }
  return out;
}

type Spec = CommandSpec<CommandPorts>;

const status: Spec = {
  name: "status",
  aliases: [],
  summary: "Show the Agent, this Conversation, its active Run and the model.",
  args: [],
  async run(ports, t) {
    const conv = t.conversation;
    const [agent, models] = await Promise.all([ports.agent(t.agentId), ports.models()]);
    const lines: CommandLine[] = [
      { label: "Agent", value: `${agent.name} (${agent.id})` },
    ];
    if (agent.state) lines.push({ label: "Agent state", value: agent.state });
    if (agent.generation !== undefined) {
      lines.push({ label: "Generation", value: String(agent.generation) });
    }
    lines.push({ label: "Conversation", value: `${conv.title} (${conv.id})` });
    if (conv.turnCount !== undefined) lines.push({ label: "Turns", value: String(conv.turnCount) });
    lines.push({ label: "Active run", value: conv.activeRunId ?? "none" });
    for (const m of models) {
      lines.push({
        label: `Model ${m.id}`,
        value: m.available
          ? `available${m.window ? `, window ${m.window}` : ""}`
          : `unavailable${m.reason ? ` (${m.reason})` : ""}`,
      });
    }
    if (models.length === 0) lines.push({ label: "Model", value: "no catalog entries" });
    return { title: "Status", lines };
  },
};

const context: Spec = {
  name: "context",
  aliases: ["ctx"],
  summary: "Show the next Turn's context projection, or a Run's context metadata.",
  args: [runIdArg("A Run of this Agent (omit for the next Turn's projection).")],
  async run(ports, t, args) {
    if (args.length === 1) {
      const meta = await ports.runContext(t.agentId, args[0]);
      return {
        title: `Context of run ${args[0]}`,
        lines: runContextLines(meta) ?? factLines(meta),
      };
    }
    const preview = await ports.contextPreview(t.agentId, t.conversationId);
    return { title: "Next turn context", lines: projectionLines(preview) ?? factLines(preview) };
  },
};

const model: Spec = {
  name: "model",
  aliases: [],
  summary: "List the models, or pick one for this Conversation's next Turn.",
  args: [MODEL_ID_ARG],
  async run(ports, _t, args) {
    const models = await ports.models();
    if (args.length === 0) {
      return {
        title: "Models",
        // [MB-10] ready and chat-only models with their window and badges; unsupported hidden.
        lines: models.filter((m) => m.state !== "unsupported").map((m) => ({
          label: m.id,
          value: m.available
            ? [
              m.state === "chat_only" ? "chat only" : "ready",
              ...(m.window !== undefined ? [`window ${m.window}`] : []),
              ...(m.capabilities ?? []).filter((c) => c === "tools" || c === "thinking"),
            ].join(" · ")
            : `unavailable${m.reason ? ` (${m.reason})` : ""}`,
        })),
      };
    }
    const found = models.find((m) => m.id === args[0] && m.state !== "unsupported");
    if (!found) throw new AppError("model_not_found");
    return {
      title: "Model selected",
      lines: [
        { label: "Next turn uses", value: found.id },
        { label: "Availability", value: found.available ? "available" : "unavailable" },
      ],
      effect: { type: "set_model", model_id: found.id },
    };
  },
};

const compact: Spec = {
  name: "compact",
  aliases: [],
  summary: "Summarize the older history with the model; you keep or drop the summary.",
  args: [],
  run() {
    // [CX-9] The command itself never calls the model [SC-1]: its effect makes the UI ask
    // POST …/compactions, which does, and shows the summary to keep or drop.
    return Promise.resolve({
      title: "Compaction",
      lines: [
        { label: "Summary", value: "the model summarizes every turn but the latest" },
        { label: "Transcript", value: "unchanged (you keep or drop the summary; undo later)" },
      ],
      effect: { type: "compact_summary" },
    });
  },
};

const permissions: Spec = {
  name: "permissions",
  aliases: ["perms"],
  summary: "List pending tool approvals of this Agent.",
  args: [],
  async run(ports, t) {
    const pending = await ports.pendingPermissions(t.agentId);
    if (pending.length === 0) {
      return { title: "Permissions", lines: [{ label: "Pending", value: "none" }] };
    }
    return {
      title: "Permissions",
      lines: pending.map((p) => ({
        label: p.id,
        value: [p.tool, p.summary, p.runId ? `run ${p.runId}` : ""].filter(Boolean).join(" · "),
      })),
    };
  },
};

const cancel: Spec = {
  name: "cancel",
  aliases: ["stop"],
  summary: "Cancel the active Run of this Conversation (or the given Run).",
  args: [runIdArg("A Run of this Agent (omit for this Conversation's active Run).")],
  async run(ports, t, args) {
    const runId = args[0] ?? t.conversation.activeRunId;
    if (runId === null) {
      return { title: "Cancel", lines: [{ label: "Active run", value: "none" }] };
    }
    await ports.cancelRun(t.agentId, runId);
    return { title: "Cancel requested", lines: [{ label: "Run", value: runId }] };
  },
};

const clear: Spec = {
  name: "clear",
  aliases: [],
  summary: "Start a fresh Conversation (the durable transcript is never erased).",
  args: [],
  run() {
    return Promise.resolve({
      title: "Clear",
      lines: [{ label: "View", value: "a new conversation starts" }],
      effect: { type: "new_conversation" },
    });
  },
};

export const BUILTIN_COMMANDS: readonly Spec[] = [
  status,
  context,
  model,
  compact,
  permissions,
  cancel,
  clear,
];
