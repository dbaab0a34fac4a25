/**
 * The stored form of a completed Turn's answer [PF-4]: an answer of ANSWER_DEFLATE_MIN_BYTES
 * or more is kept raw-deflated in `turns.assistant_z` (agent migration 0021, `assistant_message`
 * then NULL) when that saves a quarter. This is the one place that encodes and decodes that
 * column; the Turn readers (agent_state_store's `turnRowOf`) and the search snippets read the
 * answer through `answerOf`. A stored answer that does not inflate is a damaged database
 * (`database_corrupt`), never an empty answer.
 */
import { AppError } from "../errors.ts";
import { ANSWER_DEFLATE_MIN_BYTES, IMPORT_ANSWER_MAX_BYTES } from "../limits.ts";
import { deflateText, inflateText } from "./deflated_text.ts";

/** The columns to write for `answer`: exactly one of them is non-null. */
export function storedAnswer(answer: string): { plain: string | null; z: Uint8Array | null } {
  if (answer.length < ANSWER_DEFLATE_MIN_BYTES) return { plain: answer, z: null };
  const z = deflateText(answer);
  return z ? { plain: null, z } : { plain: answer, z: null };
}

/** The answer a row holds (null: none). The largest answer any writer stores is an imported one. */
export function answerOf(plain: string | null, z: Uint8Array | null): string | null {
  if (z === null) return plain;
  const text = inflateText(z, IMPORT_ANSWER_MAX_BYTES);
  if (text === null) throw new AppError("database_corrupt", "turns.assistant_z");
  return text;
}
