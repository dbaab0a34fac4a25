/**
 * Conversation export and import [UI-9].
 *
 * Export: Markdown (the visible transcript) or JSON (`ConversationExportSchema`:
 * every Turn with its Run's durable events as the journal holds them). A
 * document over CONVERSATION_EXPORT_MAX_BYTES or CONVERSATION_EXPORT_TURNS_MAX
 * Turns is `export_too_large` (413) — never a truncated file.
 *
 * Import: a body of at most CONVERSATION_EXPORT_MAX_BYTES (413 past it, not
 * read further), UTF-8 JSON matching the same strict schema (else
 * `import_invalid`, 422). Nothing in the file is trusted as an identity:
 * a new Conversation id and new Turn ids are minted; ids, digests, Run events,
 * timestamps and terminal codes in the file are ignored. Only the visible
 * transcript is kept: title, user messages, and the answers of completed
 * Turns (which alone are model history, as for any Turn). A Turn that was not
 * completed is imported as what it was (failed/cancelled/interrupted; a
 * `running` one as interrupted) with the fixed summary `imported`. The
 * Conversation and its Turns are written in one transaction under the
 * per-Agent cap, so a refused import creates nothing.
 */
import {
  CONVERSATION_EXPORT_FORMAT,
  type ConversationExport,
  ConversationExportSchema,
} from "../protocol/api.ts";
import { AppError } from "../errors.ts";
import {
  CONVERSATION_EXPORT_MAX_BYTES,
  CONVERSATION_EXPORT_TURNS_MAX,
  CONVERSATIONS_PER_AGENT_MAX,
} from "../limits.ts";
import { getConversation } from "../store/agent_state_store.ts";
import { allTurns, importConversation } from "../store/history_store.ts";
import { getRun, listEvents } from "../store/run_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { escapeName } from "../display_name.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

const iso = (ms: number) => new Date(ms).toISOString();

function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** The JSON export document of one Conversation. */
export function exportJson(db: DatabaseSync, conversationId: string, now: number): string {
  const conv = getConversation(db, conversationId);
  if (!conv) throw new AppError("conversation_not_found");
  const turns = allTurns(db, conversationId, CONVERSATION_EXPORT_TURNS_MAX);
  if (turns.length > CONVERSATION_EXPORT_TURNS_MAX) throw new AppError("export_too_large");
  const doc: ConversationExport = {
    format: CONVERSATION_EXPORT_FORMAT,
    exported_at: iso(now),
    conversation: { id: conv.id, title: conv.title, created_at: iso(conv.created_at) },
    turns: turns.map((t) => {
      const run = t.run_id ? getRun(db, t.run_id) : null;
      return {
        seq: t.seq,
        state: t.state,
        user_message: t.user_message,
        assistant_message: t.state === "completed" ? t.assistant_message : null,
        created_at: iso(t.created_at),
        finished_at: t.finished_at === null ? null : iso(t.finished_at),
        run: run
          ? {
            id: run.id,
            model_id: run.model_id,
            state: run.state,
            journal: run.journal,
            events: listEvents(db, run.id).map((e) => ({
              seq: e.seq,
              kind: e.kind,
              body: parseBody(e.body),
              digest: e.digest,
            })),
          }
          : null,
      };
    }),
  };
  const text = JSON.stringify(doc, null, 1);
  if (utf8Bytes(text) > CONVERSATION_EXPORT_MAX_BYTES) {
    throw new AppError("export_too_large");
  }
  return text;
}

/** The Markdown transcript of one Conversation (visible text only). */
export function exportMarkdown(db: DatabaseSync, conversationId: string, now: number): string {
  const conv = getConversation(db, conversationId);
  if (!conv) throw new AppError("conversation_not_found");
  const turns = allTurns(db, conversationId, CONVERSATION_EXPORT_TURNS_MAX);
  if (turns.length > CONVERSATION_EXPORT_TURNS_MAX) throw new AppError("export_too_large");
  const out = [`# ${escapeName(conv.title)}`, "", `_Exported ${iso(now)} from Agent Builder._`, ""];
  for (const t of turns) {
    out.push(`## User (turn ${t.seq})`, "", t.user_message, "");
    if (t.state === "completed") out.push("## Assistant", "", t.assistant_message ?? "", "");
    else {out.push(
        `_The turn ended ${t.state}${t.terminal_code ? ` (${t.terminal_code})` : ""}._`,
        "",
      );}
  }
  const text = out.join("\n");
  if (utf8Bytes(text) > CONVERSATION_EXPORT_MAX_BYTES) {
    throw new AppError("export_too_large");
  }
  return text;
}

/** Validates an export document's bytes and imports its transcript as a new Conversation. */
export function importJson(
  db: DatabaseSync,
  bytes: Uint8Array,
  now: number,
): { id: string; turns: number } {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new AppError("import_invalid", "not json");
  }
  const parsed = ConversationExportSchema.safeParse(value);
  if (!parsed.success) throw new AppError("import_invalid", "schema");
  const doc = parsed.data;
  const id = crypto.randomUUID();
  const ok = importConversation(db, {
    id,
    title: doc.conversation.title,
    now,
    turns: doc.turns.map((t) => ({
      state: t.state === "running" ? "interrupted" : t.state,
      userMessage: t.user_message,
      assistantMessage: t.state === "completed" ? (t.assistant_message ?? "") : null,
    })),
  }, CONVERSATIONS_PER_AGENT_MAX);
  if (!ok) throw new AppError("conversation_limit");
  return { id, turns: doc.turns.length };
}
