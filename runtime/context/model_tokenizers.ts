/**
 * The tokenizer service bound to the operator's Ollama [CX-7]: a model's
 * vocabulary is read with `POST /api/show {model, verbose: true}` on the
 * broker's pinned address (≤ MODEL_SHOW_VERBOSE_BODY_MAX_BYTES, ≤
 * MODEL_SHOW_TIMEOUT_MS). Any failure is a reason for the upper bound, never
 * an error of the Run or the preview.
 */
import { MODEL_SHOW_TIMEOUT_MS, MODEL_SHOW_VERBOSE_BODY_MAX_BYTES } from "../limits.ts";
import { requestJson } from "../model/ollama_client.ts";
import type { ModelBroker } from "../model/types.ts";
import { TransportError } from "../model/http_client.ts";
import { createTokenizerService, type TokenizerService } from "./tokenizer.ts";

export function createModelTokenizers(broker: ModelBroker): TokenizerService {
  return createTokenizerService({
    async showVerbose(modelId) {
      const addr = broker.admin();
      if (addr === null) return { ok: false, reason: "model_unreachable" };
      try {
        const r = await requestJson(
          addr,
          "POST",
          "/api/show",
          { model: modelId, verbose: true },
          AbortSignal.timeout(MODEL_SHOW_TIMEOUT_MS),
          MODEL_SHOW_VERBOSE_BODY_MAX_BYTES,
        );
        if (r.status !== 200) return { ok: false, reason: "vocabulary_show_failed" };
        if (r.text === null) {
          return {
            ok: false,
            reason: r.tooLarge ? "vocabulary_too_large" : "vocabulary_show_failed",
          };
        }
        return { ok: true, text: r.text };
      } catch (err) {
        if (err instanceof TransportError) return { ok: false, reason: "vocabulary_show_failed" };
        throw err;
      }
    },
  });
}
