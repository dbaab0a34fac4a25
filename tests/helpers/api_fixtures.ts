/**
 * Valid server response objects for UI unit tests, each checked against its
 * runtime/protocol/api.ts schema when built, so a fixture can never drift
 * from the contract the UI parses with. Pass only the fields a test cares about.
 */
import type * as z from "zod";
import {
  CommandResultResponse,
  ContextPreviewResponse,
  ConversationSchema,
  TurnSchema,
} from "../../runtime/protocol/api.ts";

const T0 = "2026-01-01T00:00:00.000Z";

function valid<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  return schema.parse(value);
}

export function conversationJson(o: Partial<z.infer<typeof ConversationSchema>> = {}) {
  return valid(ConversationSchema, {
    id: "c",
    title: "T",
    revision: 1,
    parent_id: null,
    head_turn_id: null,
    branched_from_turn_id: null,
    created_at: T0,
    updated_at: T0,
    ...o,
  });
}

export function turnJson(o: Partial<z.infer<typeof TurnSchema>> = {}) {
  return valid(TurnSchema, {
    id: "t",
    seq: 1,
    state: "completed",
    user_message: "",
    assistant_message: null,
    run_id: null,
    created_at: T0,
    finished_at: null,
    partial_text: null,
    terminal: null,
    ...o,
  });
}

export function projectionJson(
  o: { context_tokens: number; window: number; remaining_percent: number },
  extra: { exact?: boolean; calibrated?: number; reason?: string } = {},
) {
  const reserve = Math.min(4096, Math.floor(o.window / 4));
  const budget = o.window - reserve;
  const used = extra.calibrated ?? o.context_tokens;
  const free = Math.max(0, budget - used);
  return valid(ContextPreviewResponse, {
    available: true,
    estimator: "test",
    budget,
    fixed_context_tokens: o.context_tokens,
    history_tokens: 0,
    safe_user_tokens: Math.max(0, budget - o.context_tokens),
    tokens_before_auto_compaction: 0,
    calibration: extra.calibrated === undefined
      ? { samples: 0, ratio: null, calibrated_context_tokens: null }
      : {
        samples: 3,
        ratio: Math.round((extra.calibrated / o.context_tokens) * 1000) / 1000,
        calibrated_context_tokens: extra.calibrated,
      },
    meter: {
      used_tokens: used,
      window: o.window,
      output_reserve: reserve,
      free_tokens: free,
      used_percent: Math.min(100, Math.round((used * 100) / o.window)),
      free_percent: o.remaining_percent,
      basis: extra.calibrated === undefined ? "estimate" : "calibrated",
      counting: extra.exact ? "exact" : "upper_bound",
    },
    counting: extra.exact
      ? { mode: "exact", estimator: "qwen3-bpe-v1", tokenizer: "qwen3", reason: null }
      : {
        mode: "upper_bound",
        estimator: "utf8-bytes-upper-bound-v1",
        tokenizer: null,
        reason: extra.reason ?? "no_tokenizer",
      },
    breakdown: {
      parts: [
        { name: "platform", tokens: used - Math.floor(used / 2) },
        { name: "instructions", tokens: 0 },
        { name: "environment", tokens: 0 },
        { name: "git", tokens: 0 },
        { name: "history", tokens: Math.floor(used / 2) },
        { name: "tools", tokens: 0 },
        { name: "current_message", tokens: 0 },
        { name: "output_reserve", tokens: reserve },
        { name: "free", tokens: free },
      ],
      used,
      history_turns: { kept: 1, collapsed: 0, omitted: 0, summarized: 0 },
    },
    ...o,
  });
}

export function commandResultJson(o: Partial<z.infer<typeof CommandResultResponse>> = {}) {
  return valid(CommandResultResponse, {
    command: "status",
    model_invoked: false,
    turn_created: false,
    title: "Status",
    lines: [],
    effect: null,
    truncated: false,
    ...o,
  });
}
