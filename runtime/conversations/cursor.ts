/**
 * Turn-page cursors [CV-3]: opaque `before` tokens the server hands out and
 * only the server can mint. A cursor is HMAC-SHA-256 authenticated with a
 * random key that lives only in this process's memory, and is bound to the
 * Agent, the Conversation, the Conversation revision and the page boundary.
 *
 * Refused with `invalid_session_cursor` (400): anything malformed or over
 * length, a forged or altered MAC, a cursor of another Agent or Conversation,
 * a cursor minted at an older revision (rename, new Turn, continue), and any
 * cursor minted before a restart (the key is gone).
 *
 * Pure apart from the key, which is passed in (tests) or drawn at creation.
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";
import { AppError } from "../errors.ts";
import { CURSOR_TOKEN_MAX_CHARS, SESSION_CURSOR_KEY_BYTES } from "../limits.ts";

export interface CursorBinding {
  agentId: string;
  conversationId: string;
  revision: number;
  /** The page boundary: the next page holds Turns with seq < boundarySeq. */
  boundarySeq: number;
}

export interface CursorCodec {
  encode(binding: CursorBinding): string;
  /** Returns the boundary seq, or throws invalid_session_cursor. */
  decode(
    token: string,
    expect: { agentId: string; conversationId: string; revision: number },
  ): number;
}

const VERSION = "tp1";
const DOMAIN = "agent-builder/turn-page-cursor/v1\0";
const MAC_BYTES = 32;
const B64URL = /^[A-Za-z0-9_-]+$/;

function invalid(detail: string): AppError {
  return new AppError("invalid_session_cursor", detail);
}

export function createCursorCodec(
  key: Uint8Array = crypto.getRandomValues(new Uint8Array(SESSION_CURSOR_KEY_BYTES)),
): CursorCodec {
  if (key.byteLength < SESSION_CURSOR_KEY_BYTES) throw new Error("cursor key too short");
  const secret = Buffer.from(key);
  const mac = (payload: string): Buffer =>
    createHmac("sha256", secret).update(DOMAIN).update(payload, "utf8").digest();

  return {
    encode(b) {
      if (!Number.isSafeInteger(b.revision) || b.revision < 0) throw new Error("bad revision");
      if (!Number.isSafeInteger(b.boundarySeq) || b.boundarySeq < 1) {
        throw new Error("bad boundary");
      }
      const payload = [VERSION, b.agentId, b.conversationId, b.revision, b.boundarySeq].join("|");
      return `${Buffer.from(payload, "utf8").toString("base64url")}.${
        mac(payload).toString("base64url")
      }`;
    },

    decode(token, expect) {
      if (
        typeof token !== "string" || token.length === 0 || token.length > CURSOR_TOKEN_MAX_CHARS
      ) {
        throw invalid("length");
      }
      const parts = token.split(".");
      if (parts.length !== 2 || !B64URL.test(parts[0]) || !B64URL.test(parts[1])) {
        throw invalid("shape");
      }
      const given = Buffer.from(parts[1], "base64url");
      const payload = Buffer.from(parts[0], "base64url").toString("utf8");
      if (given.byteLength !== MAC_BYTES) throw invalid("mac length");
      // SECURITY: constant-time comparison; the MAC is checked before any field is trusted.
      if (!timingSafeEqual(given, mac(payload))) throw invalid("mac");
      const fields = payload.split("|");
      if (fields.length !== 5 || fields[0] !== VERSION) throw invalid("fields");
      const [, agentId, conversationId, revText, seqText] = fields;
      if (agentId !== expect.agentId || conversationId !== expect.conversationId) {
        throw invalid("foreign conversation");
      }
      if (!/^\d{1,15}$/.test(revText) || Number(revText) !== expect.revision) {
        throw invalid("stale revision");
      }
      if (!/^\d{1,15}$/.test(seqText) || Number(seqText) < 1) throw invalid("boundary");
      return Number(seqText);
    },
  };
}
