/**
 * Named scripted responses for the fake Ollama server. Each returns a
 * ScriptSource (a function of the recorded request, so frames carry the
 * requested model name). `SCENARIOS` maps CLI names to builders; `auto`
 * picks one per request from trigger words in the latest user message
 * (`AUTO_TRIGGERS`). Tool calls use the provider wire names the product
 * advertises (`file__stat`, not the tool id `file/stat`).
 */
import {
  contentFrame,
  doneFrame,
  type DoneOptions,
  type FakeToolCall,
  thinkingFrame,
  toolCallFrame,
} from "./frames.ts";
import type { ChatScript, RecordedChat, ScriptSource, Step } from "./server.ts";

export interface TextOptions extends DoneOptions {
  /** Delay between frames. @default 0 */
  frameDelayMs?: number;
  /** Delay before the first frame. @default 0 */
  firstFrameDelayMs?: number;
}

/** Splits text into word-ish chunks the way a tokenizer stream looks. */
export function chunkText(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [text];
}

function* textSteps(model: string, chunks: string[], o: TextOptions): Generator<Step> {
  if (o.firstFrameDelayMs) yield { delayMs: o.firstFrameDelayMs };
  for (const [i, c] of chunks.entries()) {
    if (i > 0 && o.frameDelayMs) yield { delayMs: o.frameDelayMs };
    yield { frame: contentFrame(model, c) };
  }
  yield { frame: doneFrame(model, o) };
}

/**
 * An answer of `n` words, one content frame each (" w0 w1 … w96 w0 …"), then `done` with `n`
 * output tokens: the benches' answers of a given length (run_bench.ts, wal_map.ts).
 */
export function wordsAnswer(n: number): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: (function* () {
      for (let i = 0; i < n; i++) yield { frame: contentFrame(c.model, ` w${i % 97}`) };
      yield { frame: doneFrame(c.model, { evalCount: n }) };
    })(),
  });
}

/** A plain streamed answer. */
export function text(answer: string, o: TextOptions = {}): ScriptSource {
  return (c: RecordedChat) => ({ kind: "stream", steps: textSteps(c.model, chunkText(answer), o) });
}

export const MARKDOWN_ANSWER = [
  "Hello! I'm the **scripted Ollama** server, so no real model is running.",
  "",
  "Here is what I can show you:",
  "",
  "- streamed answers, one word at a time",
  "- `inline code` and fenced blocks:",
  "",
  "```ts",
  'console.log("hello from agent-builder");',
  "```",
  "",
  "Start `agent-builder serve --ollama http://127.0.0.1:11434` against a real Ollama for real answers.",
].join("\n");

/** The default: a friendly streamed Markdown answer (20 ms between frames). */
export function markdown(frameDelayMs = 20): ScriptSource {
  return text(MARKDOWN_ANSWER, { frameDelayMs });
}

/** Tool calls in a `done:false` frame, then the final frame. */
export function toolCall(calls: FakeToolCall[] = [defaultCall()]): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: [{ frame: toolCallFrame(c.model, calls) }, { frame: doneFrame(c.model) }],
  });
}

/** Tool calls carried inside the final `done:true` frame. */
export function toolCallInDone(calls: FakeToolCall[] = [defaultCall()]): ScriptSource {
  return (c) => ({ kind: "stream", steps: [{ frame: doneFrame(c.model, { toolCalls: calls }) }] });
}

/** Several tool calls in one frame. */
export function multiToolCalls(): ScriptSource {
  return toolCall([
    { id: "call_a1", name: "file__stat", arguments: { path: "README.md" } },
    { id: "call_b2", name: "file__read_text", arguments: { path: "src/main.ts", offset: 0 } },
  ]);
}

function defaultCall(): FakeToolCall {
  return { id: "call_f00d", name: "file__stat", arguments: { path: "agent-builder.md" } };
}

/** A text block streamed first, then tool calls in the same response (a multi-block answer). */
export function textThenTool(
  lead: string,
  calls: FakeToolCall[] = [defaultCall()],
  o: TextOptions = {},
): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: (function* () {
      for (const [i, w] of chunkText(lead).entries()) {
        if (i > 0 && o.frameDelayMs) yield { delayMs: o.frameDelayMs };
        yield { frame: contentFrame(c.model, w) };
      }
      yield { frame: toolCallFrame(c.model, calls) };
      yield { frame: doneFrame(c.model) };
    })(),
  });
}

/** Thinking frames, then a short answer. */
export function thinking(): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: [
      { frame: thinkingFrame(c.model, "The user greets me. ") },
      { frame: thinkingFrame(c.model, "I should answer briefly.") },
      ...[...textSteps(c.model, ["Hi", " there!"], {})],
    ],
  });
}

/** Some content, then an in-band `{"error":…}` line. */
export function inBandError(): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: [
      { frame: contentFrame(c.model, "Partial") },
      { frame: { error: "an error was encountered while running the model: unexpected EOF" } },
    ],
  });
}

/** Content frames, then EOF without a `done` frame. */
export function eofWithoutDone(): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: [{ frame: contentFrame(c.model, "Cut") }, { frame: contentFrame(c.model, " off") }],
  });
}

/** A 200 response with an empty body (EOF before any frame). */
export function emptyStream(): ChatScript {
  return { kind: "stream", steps: [] };
}

export function modelNotFound(): ScriptSource {
  return (c) => ({
    kind: "error",
    status: 404,
    body: JSON.stringify({ error: `model '${c.model}' not found` }),
  });
}

export function capabilityError(cap = "tools"): ScriptSource {
  return (c) => ({
    kind: "error",
    status: 400,
    body: JSON.stringify({ error: `"${c.model}" does not support ${cap}` }),
  });
}

export function contextOverflow(status: 400 | 413 = 400): ChatScript {
  return {
    kind: "error",
    status,
    body: JSON.stringify({ error: "the input length exceeds the context length" }),
  };
}

export function serverError(status = 500): ChatScript {
  return {
    kind: "error",
    status,
    body: JSON.stringify({ error: "llama runner process has terminated" }),
  };
}

/** The first frame only after `delayMs`. */
export function slowFirstFrame(delayMs: number, answer = "Finally here."): ScriptSource {
  return text(answer, { firstFrameDelayMs: delayMs });
}

/** A few frames, then a stall until the client leaves. */
export function stall(): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: [{ frame: contentFrame(c.model, "Thinking about") }, {
      frame: contentFrame(c.model, " it"),
    }, {
      hang: true,
    }],
  });
}

export const REPEATED_SENTENCE = "I will keep saying the same thing again and again. ";

/** Endless repetition (never sends `done`), `frameDelayMs` between frames. */
export function repetition(frameDelayMs = 0, prefix = "Sure, here is the answer. "): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: (function* () {
      yield { frame: contentFrame(c.model, prefix) };
      for (;;) {
        for (const w of chunkText(REPEATED_SENTENCE)) {
          if (frameDelayMs) yield { delayMs: frameDelayMs };
          yield { frame: contentFrame(c.model, w) };
        }
      }
    })(),
  });
}

/** A valid answer of `bytes` visible bytes of non-repeating text, then done. */
export function oversize(bytes = 20 * 1024): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: (function* () {
      let sent = 0;
      let i = 0;
      while (sent < bytes) {
        const piece = `word${i++}é${(i * 7919) % 10007} `;
        sent += new TextEncoder().encode(piece).length;
        yield { frame: contentFrame(c.model, piece) };
      }
      yield { frame: doneFrame(c.model, { evalCount: i, doneReason: "length" }) };
    })(),
  });
}

/** Many tiny thinking frames (raw frame bound), then done. */
export function manyFrames(frames: number): ScriptSource {
  return (c) => ({
    kind: "stream",
    steps: (function* () {
      for (let i = 0; i < frames; i++) yield { frame: thinkingFrame(c.model, ".") };
      yield { frame: contentFrame(c.model, "ok") };
      yield { frame: doneFrame(c.model) };
    })(),
  });
}

/** Raw bytes that are not JSON. */
export function garbage(): ChatScript {
  return { kind: "stream", steps: [{ raw: "this is not json\n" }] };
}

/** The latest message of a recorded chat request (role and text), if any. */
function lastMessage(c: RecordedChat): { role: string; content: string } {
  const messages = Array.isArray(c.body?.messages) ? c.body.messages : [];
  const m = messages.at(-1) ?? {};
  return {
    role: typeof m.role === "string" ? m.role : "",
    content: typeof m.content === "string" ? m.content : "",
  };
}

/** What `auto` answers once a tool result came back: the result's first line, quoted. */
function afterTool(result: string): string {
  const first = result.split("\n").find((l) => l.trim() !== "") ?? "(empty)";
  return `Done. The tool answered:\n\n> ${first.slice(0, 200)}\n\nAnything else?`;
}

/**
 * Trigger words of `--scenario auto`, checked in this order against the latest user message
 * (case-insensitive, whole words). Tool scenarios write a short lead block, call the tool, and
 * answer with the tool's result once it comes back (a multi-block answer).
 */
export const AUTO_TRIGGERS: ReadonlyArray<{ word: string; what: string; build: ScriptSource }> = [
  {
    word: "write",
    what: "file__write notes.md (asks for approval), then a closing block",
    build: textThenTool("I'll write `notes.md` for you.", [{
      name: "file__write",
      arguments: { path: "notes.md", content: "# Notes\n\n- [x] written by the scripted model\n" },
    }]),
  },
  {
    word: "read",
    what: "file__read_text agent-builder.md, then a closing block",
    build: textThenTool("Let me read `agent-builder.md`.", [{
      name: "file__read_text",
      arguments: { path: "agent-builder.md" },
    }]),
  },
  {
    word: "stat",
    what: "file__stat agent-builder.md, then a closing block",
    build: textThenTool("Checking `agent-builder.md`.", [defaultCall()]),
  },
  {
    word: "list",
    what: "file__glob *, then a closing block",
    build: textThenTool("Listing the workspace.", [{
      name: "file__glob",
      arguments: { pattern: "*" },
    }]),
  },
  {
    word: "search",
    what: "file__grep TODO, then a closing block",
    build: textThenTool("Searching for TODO.", [{
      name: "file__grep",
      arguments: { pattern: "TODO" },
    }]),
  },
  { word: "think", what: "thinking frames, then a short answer", build: thinking() },
  { word: "tasks", what: "a GFM task list", build: text("- [x] done\n- [ ] still open\n") },
  { word: "stall", what: "two frames, then silence until stopped", build: stall() },
  { word: "slow", what: "a slow stream (300 ms between words)", build: markdown(300) },
  { word: "repeat", what: "endless repetition (the repetition guard)", build: repetition(10) },
  { word: "error", what: "partial text, then an in-band error", build: inBandError() },
  { word: "long", what: "a 20 KiB answer (the output bound)", build: oversize() },
];

/**
 * One server, every scenario: a request whose latest message is a tool result gets a closing
 * block; otherwise the first trigger word found in the latest user message picks the scenario;
 * none found → the Markdown answer.
 */
export function auto(delayMs = 20): ScriptSource {
  return (c) => {
    const last = lastMessage(c);
    const words = new Set(last.content.toLowerCase().split(/[^a-z]+/));
    const src = last.role === "tool"
      ? text(afterTool(last.content), { frameDelayMs: delayMs })
      : AUTO_TRIGGERS.find((t) => words.has(t.word))?.build ?? markdown(delayMs);
    return typeof src === "function" ? src(c) : src;
  };
}

// ── Long scripted tool sequences [SB-8] ─────────────────────────────────────

/**
 * A long scripted Turn: the model's response N of the Turn is `steps[N]` (one
 * or more tool calls), and once every step was played, a final answer that
 * reports what the tools returned — one line per tool message it was sent
 * (its tool and first line, so a collapsed result shows its receipt).
 * Stateless: the step is found by counting the tool results already in the
 * request against the steps' sizes, so one source serves every request of
 * the Turn (enqueue it `steps.length + 1` times, or make it the default).
 */
export function scriptedTools(steps: FakeToolCall[][], o: TextOptions = {}): ScriptSource {
  return (c) => {
    const messages: { role?: unknown; content?: unknown; tool_name?: unknown }[] =
      Array.isArray(c.body?.messages) ? c.body.messages : [];
    const results = messages.filter((m) => m.role === "tool");
    let left = results.length;
    let k = 0;
    while (k < steps.length && left >= steps[k].length) left -= steps[k++].length;
    if (k < steps.length) {
      return {
        kind: "stream",
        steps: [{ frame: toolCallFrame(c.model, steps[k]) }, { frame: doneFrame(c.model) }],
      };
    }
    const lines = results.map((m, i) => {
      const first = String(m.content ?? "").split("\n")[0].slice(0, 160);
      return `${i + 1}. ${String(m.tool_name ?? "?")}: ${first}`;
    });
    const answer = `The tools returned:\n${lines.join("\n")}\n`;
    return { kind: "stream", steps: textSteps(c.model, chunkText(answer), o) };
  };
}

/** The CLI's `script` demo: reads, a search and a listing, then the report. */
export const DEMO_SCRIPT: FakeToolCall[][] = [
  [{ name: "file__stat", arguments: { path: "agent-builder.md" } }],
  [{ name: "file__read_text", arguments: { path: "agent-builder.md" } }],
  [{ name: "file__glob", arguments: { pattern: "*" } }],
  [{ name: "file__grep", arguments: { pattern: "TODO" } }],
];

/** CLI names → builders (default arguments). */
export const SCENARIOS: Readonly<Record<string, (delayMs: number) => ScriptSource>> = Object.freeze(
  {
    auto: (d) => auto(d || 20),
    markdown: (d) => markdown(d || 20),
    plain: () => text("Hello from the scripted Ollama."),
    tool_call: () => toolCall(),
    tool_call_in_done: () => toolCallInDone(),
    multi_tool_calls: () => multiToolCalls(),
    thinking: () => thinking(),
    inband_error: () => inBandError(),
    eof_without_done: () => eofWithoutDone(),
    model_not_found: () => modelNotFound(),
    capability_error: () => capabilityError(),
    context_overflow: () => contextOverflow(),
    slow_first_frame: (d) => slowFirstFrame(d || 5000),
    stall: () => stall(),
    repetition: (d) => repetition(d || 10),
    oversize: () => oversize(),
    server_error: () => serverError(),
    script: (d) => scriptedTools(DEMO_SCRIPT, { frameDelayMs: d }),
  },
);
