/**
 * The trusted inputs of a Run and of the NextTurnProjection: the Agent's
 * state database, the qualified model profile, the instruction file [CX-2],
 * completed-Turn history [CV-5] and the EffectiveToolSet [TL-1].
 *
 * What this file enforces: history holds only `completed` Turns with a
 * committed assistant message (failed/cancelled/interrupted never reach the
 * model), read newest-first with a bound and handed over oldest-first, and
 * completed Turns beyond that bound leave a content-free receipt (count,
 * boundary ids, digest) instead of vanishing; an
 * instruction file that fails any check refuses the Run with its own code; a
 * model without the `tools` capability gets an empty ToolSet; browser Runs are
 * interactive (`ask` tools wait for approval) and the exec tools are denied
 * when the service has no runner [TL-7, EX-1].
 */
import type { TurnLimits } from "./run_begin.ts";
import { isModelName } from "../protocol/model_name.ts";
import type { AgentService } from "../agents/service.ts";
import {
  type ContextInputs,
  type HistoryBundle,
  type OmittedHistory,
  omittedHistoryReceipt,
} from "../context/plan.ts";
import { AppError } from "../errors.ts";
import { agentDataRel, type HomeLayout } from "../home.ts";
import type { ModelBroker } from "../model/types.ts";
import { canonicalJson, domainDigest } from "../protocol/digest.ts";
import { completedTurnIdsBefore, getConversation, pageTurns } from "../store/agent_state_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { sealCatalog, type ToolCatalog, type ToolSpec } from "../tools/catalog.ts";
import { HISTORY_TURNS_READ_MAX, TOOLSET_TOOLS_MAX } from "../limits.ts";
import {
  type AgentRule,
  type EffectiveToolSet,
  type PlatformRule,
  type PolicyRule,
  resolveToolSet,
} from "../tools/policy.ts";
import { readInstructionFile } from "../workspace/instruction_file.ts";
import { DOCUMENT_TOOL_ID } from "../documents/documents.ts";
import {
  UPPER_BOUND_COUNTER,
  UPPER_BOUND_ESTIMATOR_ID,
  upperBoundState,
} from "../context/counter.ts";
import type { Counting, TokenizerService } from "../context/tokenizer.ts";
import { activeCompaction } from "../store/compaction_store.ts";
import type { GitCollector } from "../context/git_collector.ts";

/** The exec tools need the runner sandbox [TL-7, EX-1]: without one they are not offered. */
const NO_RUNNER_RULES = [
  "exec/run",
  "exec/command",
  "exec/apply",
  "task/status",
  "task/output",
  DOCUMENT_TOOL_ID,
].map((tool_id) => ({
  tool_id,
  decision: "deny" as const,
}));

/** What `prepare` read, as a Conversation's next plan needs it. */
export type PreparedInputs = Awaited<ReturnType<RunInputs["prepare"]>>;

/** The ContextPlan inputs shared by a Run and the NextTurnProjection. */
export function contextInputsOf(
  p: PreparedInputs,
  modelId: string,
  now: Date,
): Omit<ContextInputs, "planId" | "userMessage" | "compact"> {
  return {
    instructions: p.instructions,
    now,
    history: p.history,
    omitted: p.omitted,
    summary: p.summary,
    git: p.git,
    toolset: p.toolset,
    window: p.profile.window,
    budget: p.profile.budget,
    modelId,
    counter: p.counting.counter,
  };
}

export interface RunInputsOptions {
  home: HomeLayout;
  agents: AgentService;
  broker: ModelBroker;
  catalog: ToolCatalog;
  /** Whether a runner executes the exec tools [EX-1]. @default false */
  runner?: boolean;
  /** Whether document/extract_text has an executor [LC-4]. @default false */
  documents?: boolean;
  /** The Agent's enabled extension tools [LC-5]; absent ⇒ none. */
  extensionSpecs?: (agentId: string) => ToolSpec[];
  /** Exact counting where the tokenizer is verified [CX-7]; absent ⇒ the upper bound. */
  tokenizers?: TokenizerService;
  /** The workspace's git status through the runner [CX-9]; absent ⇒ no git section. */
  git?: GitCollector;
  /** The platform's denies and the Agent's rules [TL-9]; absent ⇒ catalog defaults. */
  agentPolicy?: (agentId: string) => { rules: AgentRule[]; platform: readonly PlatformRule[] };
}

const NO_TOKENIZER: Counting = {
  counter: UPPER_BOUND_COUNTER,
  state: upperBoundState("no_tokenizer"),
};

export type RunInputs = ReturnType<typeof createRunInputs>;

export function createRunInputs(opts: RunInputsOptions) {
  const catalog = opts.catalog;
  function stateDb(agentId: string): DatabaseSync {
    opts.agents.requireUsable(agentId);
    return opts.agents.pool.get(agentId);
  }

  function workspaceDir(agentId: string): string {
    return `${opts.home.root}/${agentDataRel(agentId)}/workspace`;
  }

  /** The Agent's `default_model_id`, else the catalog default [MB-14]. */
  function defaultModelId(agentId?: string): string {
    if (agentId !== undefined) {
      const own = opts.agents.requireUsable(agentId).default_model_id;
      if (own) return own;
    }
    const p = opts.broker.publicProfiles();
    return (p.find((x) => x.default) ?? p[0]).id;
  }

  /** The Agent's own lower agent-loop bounds [SB-8] (unset: the product's). */
  function limitsOf(agentId: string): Partial<TurnLimits> {
    const a = opts.agents.requireUsable(agentId);
    return {
      modelCallsMax: a.max_model_calls ?? undefined,
      toolCallsMax: a.max_tool_calls ?? undefined,
      deadlineMs: a.run_deadline_s == null ? undefined : a.run_deadline_s * 1000,
    };
  }

  /** The Agent's `reasoning` setting [MB-12] (default on). */
  function reasoningOf(agentId: string): boolean {
    return (opts.agents.requireUsable(agentId).reasoning ?? 1) === 1;
  }

  function toolsetFor(agentId: string, toolsCapable: boolean): EffectiveToolSet {
    // The Agent's enabled MCP tools join the built-ins, up to the toolset bound [LC-5].
    const extra = opts.extensionSpecs?.(agentId) ?? [];
    const cat = extra.length === 0 ? catalog : sealCatalog([
      ...catalog.specs,
      ...extra.slice(0, Math.max(0, TOOLSET_TOOLS_MAX - catalog.specs.length)),
    ]);
    const rules: PolicyRule[] = toolsCapable
      ? (opts.runner ? [] : [
        ...NO_RUNNER_RULES,
        // Skills run in the runner too [LC-3].
        ...cat.specs.filter((s) => s.id.startsWith("skill/")).map((s) => ({
          tool_id: s.id,
          decision: "deny" as const,
        })),
      ])
      : cat.specs.map((s) => ({ tool_id: s.id, decision: "deny" as const }));
    // [LC-4] The admission fence of documents: a Run admitted while they are off never has
    // the tool (turning them on later does not add it to that Run).
    if (!opts.documents || (opts.agents.requireUsable(agentId).documents ?? 1) !== 1) {
      rules.push({ tool_id: DOCUMENT_TOOL_ID, decision: "deny" });
    }
    // Browser Runs are interactive: `ask` tools wait for the operator's approval [TL-2].
    return resolveToolSet({
      catalog: cat,
      rules,
      interactive: true,
      id: crypto.randomUUID(),
      agent: opts.agentPolicy?.(agentId),
    });
  }

  /** The calibration scope [CX-5]: model, toolset, renderer and (when not the default) estimator. */
  function usageScope(
    modelId: string,
    toolset: EffectiveToolSet,
    estimator = UPPER_BOUND_ESTIMATOR_ID,
  ): string {
    return domainDigest(
      "agent-builder/usage-scope/v1",
      canonicalJson({
        model: modelId,
        toolset: toolset.digest,
        renderer: "v1",
        // The upper bound's scope keeps its earlier digest (no calibration lost on upgrade).
        ...(estimator === UPPER_BOUND_ESTIMATOR_ID ? {} : { estimator }),
      }),
    );
  }

  /** Inputs shared by a Run and the NextTurnProjection. */
  async function prepare(
    agentId: string,
    conversationId: string,
    modelId: string,
    /** Start the model's vocabulary check if it has not run (the projection does; Runs only use a settled verdict). */
    startTokenizerCheck = false,
  ) {
    const db = stateDb(agentId);
    const conv = getConversation(db, conversationId);
    if (!conv) throw new AppError("conversation_not_found");
    // Unknown or malformed ⇒ 422 model_unknown, nothing written [MB-14].
    if (!isModelName(modelId)) throw new AppError("model_unknown");
    const prof = await opts.broker.profile(modelId);
    if (!prof.ok) throw new AppError(prof.code === "model_not_found" ? "model_unknown" : prof.code);
    const instr = readInstructionFile(workspaceDir(agentId));
    if (!instr.ok) throw new AppError(instr.code, "instruction file refused");
    const toolset = toolsetFor(agentId, prof.profile.capabilities.tools);
    const counting = opts.tokenizers
      ? await opts.tokenizers.counting(modelId, prof.profile.profileDigest, startTokenizerCheck)
      : NO_TOKENIZER;
    const git = opts.git ? await opts.git.status(agentId) : null;
    return {
      git,
      db,
      conv,
      profile: prof.profile,
      toolset,
      counting,
      instructions: instr.present ? instr.text : null,
      ...history(db, conversationId),
    };
  }

  function history(db: DatabaseSync, conversationId: string) {
    // [CX-9] A kept /compact summary stands for the Turns up to its `through_seq`.
    const c = activeCompaction(db, conversationId);
    const h = readHistory(db, conversationId, HISTORY_TURNS_READ_MAX, c?.through_seq ?? null);
    return {
      history: h.bundles,
      // Turns beyond the read bound are older than the summary's newest one in practice; a
      // summary replaces the receipt (docs/context.md).
      omitted: c ? null : h.omitted,
      summary: c ? { id: c.id, turns: c.turns, text: c.summary } : null,
    };
  }

  return { stateDb, workspaceDir, defaultModelId, reasoningOf, limitsOf, prepare, usageScope };
}

/**
 * The latest HISTORY_TURNS_READ_MAX Turns' completed bundles, oldest first,
 * and the content-free receipt of the completed Turns older than that bound.
 */
export function readHistory(
  db: DatabaseSync,
  conversationId: string,
  readMax = HISTORY_TURNS_READ_MAX,
  /** Only Turns after this seq (a kept summary covers the rest) [CX-9]; null: all. */
  afterSeq: number | null = null,
): { bundles: HistoryBundle[]; omitted: OmittedHistory | null } {
  const page = pageTurns(db, conversationId, null, readMax);
  const read = page.slice(0, readMax);
  // Only completed Turns with a committed answer enter history [CV-5].
  const bundles = read
    .filter((t) =>
      t.state === "completed" && typeof t.assistant_message === "string" &&
      (afterSeq === null || t.seq > afterSeq)
    )
    .reverse()
    .map((t) => ({
      turnId: t.id,
      user: t.user_message,
      assistant: t.assistant_message!,
      seq: t.seq,
    }));
  // pageTurns returns one row more than asked when older Turns exist.
  const omitted = page.length > readMax
    ? omittedHistoryReceipt(
      conversationId,
      completedTurnIdsBefore(db, conversationId, read[read.length - 1].seq),
    )
    : null;
  return { bundles, omitted };
}
