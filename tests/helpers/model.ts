/**
 * Test harness for the Model Broker: a real scripted Ollama server on a free
 * loopback port, a catalog with millisecond timeouts, a broker, and a recorder
 * of every boundary/attempt event in order (so tests assert the 2 + 2·N shape).
 */
import { createBroker } from "../../runtime/model/broker.ts";
import { createCatalog, type ModelTimeouts } from "../../runtime/model/catalog.ts";
import type { LogFields, Logger } from "../../runtime/log.ts";
import type {
  AttemptFinished,
  AttemptStarted,
  CallLedger,
  ChatRequest,
  ContentDelta,
  ModelBroker,
  RequestStarted,
  ResponseFinished,
  TransportObserver,
} from "../../runtime/model/types.ts";
import {
  type FakeOllama,
  type FakeOllamaOptions,
  startFakeOllama,
} from "../../tools/fake_ollama/server.ts";

/** Fast defaults so timeout tests run in milliseconds. */
export const FAST: ModelTimeouts = {
  firstFrameMs: 400,
  idleMs: 300,
  callMs: 3000,
  queueWaitMs: 300,
  circuitOpenMs: 500,
  qualifyMs: 1000,
  requalifyIntervalMs: 0,
  showMs: 1000,
  discoveryIntervalMs: 60_000,
};

export interface LogLine {
  level: "info" | "warn" | "error";
  event: string;
  fields?: LogFields;
}

export function memoryLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (event, fields) => void lines.push({ level: "info", event, fields }),
    warn: (event, fields) => void lines.push({ level: "warn", event, fields }),
    error: (event, fields) => void lines.push({ level: "error", event, fields }),
    flush: () => {},
    close: () => {},
  };
}

export type Recorded =
  | { type: "request.started"; e: RequestStarted }
  | { type: "response.finished"; e: ResponseFinished }
  | { type: "attempt.started"; e: AttemptStarted }
  | { type: "attempt.finished"; e: AttemptFinished };

export interface Recorder {
  events: Recorded[];
  deltas: ContentDelta[];
  ledger: CallLedger;
  observer: TransportObserver;
  onDelta: (d: ContentDelta) => void;
  /** Event types in order, e.g. ["request.started", "attempt.started", …]. */
  types(): string[];
}

export function recorder(): Recorder {
  const events: Recorded[] = [];
  const deltas: ContentDelta[] = [];
  return {
    events,
    deltas,
    ledger: {
      started: (e) => void events.push({ type: "request.started", e }),
      finished: (e) => void events.push({ type: "response.finished", e }),
    },
    observer: {
      attemptStarted: (e) => void events.push({ type: "attempt.started", e }),
      attemptFinished: (e) => void events.push({ type: "attempt.finished", e }),
    },
    onDelta: (d) => void deltas.push(d),
    types: () => events.map((r) => r.type),
  };
}

/** The 2 + 2·N event sequence for N attempts. */
export function pairs(n: number): string[] {
  const out = ["request.started"];
  for (let i = 0; i < n; i++) out.push("attempt.started", "attempt.finished");
  out.push("response.finished");
  return out;
}

export interface Harness {
  ollama: FakeOllama;
  broker: ModelBroker;
  log: ReturnType<typeof memoryLogger>;
  /** A request for the default model with the recorder wired in. */
  req(over?: Partial<ChatRequest>): { req: ChatRequest; rec: Recorder; abort: AbortController };
}

export interface HarnessOptions {
  timeouts?: Partial<ModelTimeouts>;
  fake?: FakeOllamaOptions;
  /** Use this URL instead of the fake server's (e.g. a closed port). */
  ollamaUrl?: string;
  /** Wait for qualification before running. @default true */
  qualify?: boolean;
}

export async function withBroker(
  fn: (h: Harness) => void | Promise<void>,
  opts: HarnessOptions = {},
): Promise<void> {
  const ollama = await startFakeOllama(opts.fake);
  const log = memoryLogger();
  const catalog = createCatalog({
    ollamaUrl: opts.ollamaUrl ?? ollama.url,
    timeouts: { ...FAST, ...opts.timeouts },
  });
  const broker = createBroker({ catalog, log, qualifyNow: false });
  try {
    if (opts.qualify ?? true) await broker.requalify();
    await fn({
      ollama,
      broker,
      log,
      req(over = {}) {
        const rec = recorder();
        const abort = new AbortController();
        const req: ChatRequest = {
          modelId: catalog.defaultId,
          phase: "plain",
          messages: [{ role: "system", content: "You are terse." }, {
            role: "user",
            content: "Hi",
          }],
          signal: abort.signal,
          deadline: Date.now() + 10_000,
          ledger: rec.ledger,
          observer: rec.observer,
          onDelta: rec.onDelta,
          ...over,
        };
        return { req, rec, abort };
      },
    });
  } finally {
    await broker.close();
    await ollama.close();
  }
}
