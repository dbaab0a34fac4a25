/**
 * A tokenizer thread whose tokenizer fails to load [CX-7]: vocabulary checks
 * answer as the real thread does, every count fails (as a missing or corrupt
 * package would).
 */
import { vocabularyOf } from "../../runtime/context/vocabulary.ts";

self.onmessage = (e: MessageEvent<{ id: number; op: string; show?: string }>) => {
  const r = e.data;
  if (r.op === "vocab") {
    const tokens = JSON.parse(r.show!).model_info["tokenizer.ggml.tokens"] as string[];
    self.postMessage({ id: r.id, ok: true, result: { ok: true, ...vocabularyOf(tokens) } });
    return;
  }
  self.postMessage({ id: r.id, ok: false, error: "TypeError" });
};
