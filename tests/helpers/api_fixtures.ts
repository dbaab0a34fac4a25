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
) {
  return valid(ContextPreviewResponse, {
    available: true,
    estimator: "test",
    budget: o.window,
    fixed_context_tokens: o.context_tokens,
    history_tokens: 0,
    safe_user_tokens: Math.max(0, o.window - o.context_tokens),
    tokens_before_auto_compaction: 0,
    calibration: { samples: 0, ratio: null, calibrated_context_tokens: null },
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
