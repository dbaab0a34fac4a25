/**
 * Exact token counting where the tokenizer is known and verified [CX-7].
 *
 * What this file enforces: a model is counted exactly only when the
 * vocabulary its Ollama reports (`/api/show` with `verbose: true`: size and
 * digest of `tokenizer.ggml.tokens`, see vocabulary.ts) equals the bundled
 * Qwen 3 tokenizer's AND the tokenizer loaded and counted; any other outcome
 * — no vocabulary reported, a different one, a show that failed, a tokenizer
 * that did not load — keeps the conservative upper bound, with the reason
 * reported in the projection and `/context`. The verdict is remembered per
 * model and qualification (profile digest) so each model is checked once.
 *
 * Counting itself happens in a Web Worker (tokenizer_worker.ts): the caller
 * `prime()`s the texts a plan will count (async, off the event loop) and the
 * admission then counts synchronously from that cache. A text that was not
 * primed counts as the sum of its primed "\n\n"-separated pieces, and an
 * unknown piece as its UTF-8 byte count — never less than the truth of a
 * byte-level BPE, so a cache miss can only over-count.
 */
import { utf8Bytes } from "../protocol/utf8.ts";
import type { CountingReason } from "../protocol/api.ts";
import {
  type CountingState,
  type TokenCounter,
  UPPER_BOUND_COUNTER,
  upperBoundState,
} from "./counter.ts";
import { QWEN3_TOKENIZER_ID, QWEN3_VOCABULARY, type Vocabulary } from "./vocabulary.ts";

/** Texts remembered per exact counter; older entries are dropped first. */
const COUNT_CACHE_MAX = 8192;

export interface PrimedCounter extends TokenCounter {
  /** Counts the texts in the tokenizer thread so `count()` of them is exact. */
  prime(texts: Iterable<string>): Promise<void>;
}

export interface Counting {
  counter: TokenCounter;
  state: CountingState;
}

export type ShowFetch = (
  modelId: string,
) => Promise<{ ok: true; text: string } | { ok: false; reason: CountingReason }>;

export interface TokenizerServiceOptions {
  /** The model's verbose `/api/show` body. */
  showVerbose: ShowFetch;
  /** The tokenizer thread's module. @default ./tokenizer_worker.ts */
  workerUrl?: URL;
}

export interface TokenizerService {
  /**
   * How the given model is counted now: the verdict once its check settled,
   * the upper bound ("tokenizer_verifying") while the check runs in the background.
   */
  counting(modelId: string, profileDigest: string, start?: boolean): Promise<Counting>;
  /** The settled verdict (starts the check if needed). */
  settle(modelId: string, profileDigest: string): Promise<Counting>;
  close(): void;
}

/** Request/response over the tokenizer thread. */
class TokenizerThread {
  #worker: Worker | null = null;
  #next = 1;
  #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  constructor(private url: URL) {}

  call<T>(msg: Record<string, unknown>): Promise<T> {
    if (this.#worker === null) {
      this.#worker = new Worker(this.url, { type: "module" });
      this.#worker.onmessage = (e) => {
        const p = this.#pending.get(e.data.id);
        if (!p) return;
        this.#pending.delete(e.data.id);
        if (e.data.ok) p.resolve(e.data.result);
        else p.reject(new Error(`tokenizer thread: ${e.data.error}`));
      };
      this.#worker.onerror = (e) => {
        e.preventDefault();
        this.#failAll(new Error("tokenizer thread failed"));
      };
    }
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#worker!.postMessage({ id, ...msg });
    });
  }

  #failAll(err: Error) {
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
    this.#worker?.terminate();
    this.#worker = null;
  }

  close() {
    this.#failAll(new Error("tokenizer thread closed"));
  }
}

/** An exact counter over the tokenizer thread, with a bounded cache. */
function exactCounter(thread: TokenizerThread): PrimedCounter {
  const cache = new Map<string, number>();
  const lookup = (t: string): number => {
    const hit = cache.get(t);
    if (hit !== undefined) return hit;
    if (t.length === 0) return 0;
    if (t.includes("\n\n")) {
      const pieces = t.split("\n\n");
      return pieces.reduce((a, p) => a + lookup(p), 0) +
        (pieces.length - 1) * (cache.get("\n\n") ?? 2);
    }
    return utf8Bytes(t);
  };
  return {
    id: QWEN3_TOKENIZER_ID,
    exact: true,
    count: lookup,
    async prime(texts) {
      const todo = [...new Set([...texts].filter((t) => t.length > 0 && !cache.has(t)))];
      if (todo.length === 0) return;
      const counts = await thread.call<number[]>({ op: "count", texts: todo });
      if (cache.size + todo.length > COUNT_CACHE_MAX) cache.clear();
      todo.forEach((t, i) => cache.set(t, counts[i]));
    },
  };
}

/** Whether a reported vocabulary is the bundled tokenizer's. */
export function sameVocabulary(a: Vocabulary, b: Vocabulary): boolean {
  return a.size === b.size && a.digest === b.digest;
}

export function createTokenizerService(opts: TokenizerServiceOptions): TokenizerService {
  const thread = new TokenizerThread(
    opts.workerUrl ?? new URL("./tokenizer_worker.ts", import.meta.url),
  );
  const verdicts = new Map<string, Promise<Counting>>();
  let shared: PrimedCounter | null = null;

  async function verify(modelId: string): Promise<Counting> {
    const show = await opts.showVerbose(modelId);
    if (!show.ok) return { counter: upperBound(), state: upperBoundState(show.reason) };
    const v = await thread.call<
      { ok: true; size: number; digest: string } | { ok: false; reason: CountingReason }
    >({ op: "vocab", show: show.text });
    if (!v.ok) return { counter: upperBound(), state: upperBoundState(v.reason) };
    if (!sameVocabulary(v, QWEN3_VOCABULARY)) {
      return { counter: upperBound(), state: upperBoundState("vocabulary_mismatch") };
    }
    const counter = shared ?? exactCounter(thread);
    try {
      // Loads the tokenizer (once) and proves it counts before anything relies on it.
      await counter.prime(["system", "user", "assistant", "tool", "\n\n"]);
    } catch {
      return {
        counter: upperBound(),
        state: upperBoundState("tokenizer_load_failed", QWEN3_TOKENIZER_ID),
      };
    }
    shared = counter;
    return {
      counter,
      state: { mode: "exact", estimator: counter.id, tokenizer: "qwen3", reason: null },
    };
  }

  const settled = new Map<string, Counting>();
  const verifying: Counting = {
    counter: UPPER_BOUND_COUNTER,
    state: upperBoundState("tokenizer_verifying", QWEN3_TOKENIZER_ID),
  };
  return {
    counting(modelId, profileDigest, start = true) {
      const key = `${modelId}\n${profileDigest}`;
      const done = settled.get(key);
      if (done) return Promise.resolve(done);
      if (start && !verdicts.has(key)) {
        // A thread that died answers with the upper bound, never a throw.
        const v = verify(modelId).catch(() => ({
          counter: upperBound(),
          state: upperBoundState("tokenizer_thread_failed", QWEN3_TOKENIZER_ID),
        })).then((c) => {
          settled.set(key, c);
          return c;
        });
        verdicts.set(key, v);
      }
      // Nobody waits for the check (a show of ~5 MB, a tokenizer of ~0.8 s CPU): until it
      // settles, the count is the upper bound, which is always safe [CX-3].
      return Promise.resolve(verifying);
    },
    settle(modelId, profileDigest) {
      void this.counting(modelId, profileDigest);
      return verdicts.get(`${modelId}\n${profileDigest}`)!;
    },
    close: () => thread.close(),
  };
}

function upperBound(): TokenCounter {
  return UPPER_BOUND_COUNTER;
}

/** Primes a counter with texts when it can be primed (the upper bound needs nothing). */
export async function primeCounter(counter: TokenCounter, texts: Iterable<string>): Promise<void> {
  const p = (counter as Partial<PrimedCounter>).prime;
  if (typeof p === "function") await p.call(counter, texts);
}
