/**
 * A scripted Ollama server speaking the real HTTP protocol, for tests and for
 * trying the UI without a model. Start it in-process on a free loopback port:
 *
 *   const ollama = await startFakeOllama();
 *   ollama.enqueue(scenarios.toolCallInDone({ name: "file/stat", arguments: { path: "a" } }));
 *   // … drive the broker against ollama.url …
 *   ollama.chats[0].body.options.num_ctx; await ollama.chats[0].closed;
 *   await ollama.close();
 *
 * Every `/api/chat` takes the next script from the FIFO queue, else the
 * default script (a friendly streamed Markdown answer). `/api/tags` and
 * `/api/show` serve the mutable `models` (see FAKE_FLEET for a realistic
 * fleet; a show may be slow or raw), `/api/pull` streams progress for the
 * `pullable` models (an error line mid-pull, slow steps) and adds the model on
 * success, `DELETE /api/delete` removes one; deleting from `models` between
 * Turns makes a model vanish. Every request is
 * recorded (method, path, headers, parsed body) and each chat records how its
 * response ended: `completed` or `client_closed` (the client disconnected).
 */
import {
  DEFAULT_FAKE_MODELS,
  type FakeModel,
  type FakePull,
  showBody,
  tagsBody,
} from "./frames.ts";
import { markdown } from "./scenarios.ts";

/** One step of a streamed response. */
export type Step =
  | { frame: Record<string, unknown> }
  | { raw: string }
  | { delayMs: number }
  /** Stall until the client disconnects. */
  | { hang: true };

export type ChatScript =
  | { kind: "stream"; steps: Iterable<Step> }
  | { kind: "error"; status: number; body: string; delayMs?: number };

/** A script, or a function of the recorded request that returns one. */
export type ScriptSource = ChatScript | ((chat: RecordedChat) => ChatScript);

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body, or null when absent/invalid. */
  body: any;
  at: number;
}

export interface RecordedChat extends RecordedRequest {
  /** Model named in the request body. */
  model: string;
  /** How the response ended; resolves once it has. */
  closed: Promise<"completed" | "client_closed">;
  /** Set once `closed` resolved. */
  end: "completed" | "client_closed" | null;
  /** Frames (lines) written before the end. */
  framesSent: number;
}

/** One `/api/pull` as received, and how its response ended [MB-13]. */
export interface RecordedPull extends RecordedRequest {
  /** Model named in the request body. */
  model: string;
  /** Progress lines written. */
  linesSent: number;
  closed: Promise<"completed" | "client_closed">;
  end: "completed" | "client_closed" | null;
}

export interface FakeOllamaOptions {
  /** @default 0 (a free port) */
  port?: number;
  /** @default "0.12.10" */
  version?: string;
  /** @default DEFAULT_FAKE_MODELS (qwen3.5:2b, 262144 tokens, completion/tools/thinking) */
  models?: Record<string, FakeModel>;
  /** @default markdown scenario */
  defaultScript?: ScriptSource;
  /** Status for /api/version (e.g. 500 to fail qualification). @default 200 */
  versionStatus?: number;
  /** Models `/api/pull` can fetch, and how each pull goes. @default {} */
  pullable?: Record<string, FakePull>;
  /**
   * Keep only the latest N recorded requests and chats (the CLI sets it, so a
   * long demo session does not grow without bound). @default unlimited (tests index `chats`)
   */
  maxRecorded?: number;
}

export interface FakeOllama {
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  readonly chats: RecordedChat[];
  readonly pulls: RecordedPull[];
  /** The most `/api/show` requests that were in flight at once (with `showDelayMs`). */
  readonly maxShowsInFlight: number;
  models: Record<string, FakeModel>;
  pullable: Record<string, FakePull>;
  version: string;
  versionStatus: number;
  /** Queues scripts for the next /api/chat requests, in order. */
  enqueue(...scripts: ScriptSource[]): void;
  setDefault(script: ScriptSource): void;
  /** Scripts still queued. */
  readonly queued: number;
  /** Resolves with the n-th (0-based) chat request once it has arrived. */
  waitForChat(n: number, timeoutMs?: number): Promise<RecordedChat>;
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
  close(): Promise<void>;
}

const enc = new TextEncoder();

function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export async function startFakeOllama(opts: FakeOllamaOptions = {}): Promise<FakeOllama> {
  const queue: ScriptSource[] = [];
  let defaultScript: ScriptSource = opts.defaultScript ?? markdown();
  const requests: RecordedRequest[] = [];
  const chats: RecordedChat[] = [];
  const pulls: RecordedPull[] = [];
  const stats = { showsInFlight: 0, maxShowsInFlight: 0 };
  const chatWaiters: Array<{ n: number; resolve: (c: RecordedChat) => void }> = [];
  const life = new AbortController();
  const maxRecorded = opts.maxRecorded ?? Infinity;

  const state = {
    models: opts.models ?? structuredClone(DEFAULT_FAKE_MODELS) as Record<string, FakeModel>,
    version: opts.version ?? "0.12.10",
    versionStatus: opts.versionStatus ?? 200,
    pullable: opts.pullable ?? {},
  };

  /** `/api/pull`: NDJSON progress like Ollama's, an error line, or success (the model appears). */
  function pullResponse(rec: RecordedPull, reqSignal: AbortSignal): Response {
    let resolveClosed!: (v: "completed" | "client_closed") => void;
    rec.closed = new Promise((r) => (resolveClosed = r));
    const finish = (how: "completed" | "client_closed") => {
      if (rec.end !== null) return;
      rec.end = how;
      resolveClosed(how);
    };
    const gone = new AbortController();
    const onGone = () => {
      gone.abort();
      finish("client_closed");
    };
    reqSignal.addEventListener("abort", onGone, { once: true });
    life.signal.addEventListener("abort", onGone, { once: true });
    const p = state.pullable[rec.model];
    const digest = "sha256:" + "ab".repeat(32);
    const total = 1_000_000;
    function* lines(): Generator<Record<string, unknown> | { delayMs: number }> {
      yield { status: "pulling manifest" };
      if (!p) {
        yield { error: "pull model manifest: file does not exist" };
        return;
      }
      const steps = p.steps ?? 5;
      for (let i = 1; i <= steps; i++) {
        if (p.stepDelayMs) yield { delayMs: p.stepDelayMs };
        if (p.failAt !== undefined && i > p.failAt) {
          yield { error: p.errorMessage ?? "pull model manifest: file does not exist" };
          return;
        }
        yield {
          status: `pulling ${digest.slice(7, 19)}`,
          digest,
          total,
          completed: Math.round(total * i / steps),
        };
      }
      yield { status: "verifying sha256 digest" };
      yield { status: "writing manifest" };
      state.models[rec.model] = structuredClone(p.model);
      yield { status: "success" };
    }
    const it = lines();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (;;) {
          if (gone.signal.aborted) return;
          const n = it.next();
          if (n.done) {
            finish("completed");
            controller.close();
            return;
          }
          if ("delayMs" in n.value && typeof n.value.delayMs === "number") {
            await sleep(n.value.delayMs, gone.signal);
            continue;
          }
          rec.linesSent++;
          controller.enqueue(enc.encode(JSON.stringify(n.value) + "\n"));
          return;
        }
      },
      cancel() {
        onGone();
      },
    }, { highWaterMark: 0 });
    return new Response(body, { status: 200, headers: { "content-type": "application/x-ndjson" } });
  }

  async function chatResponse(
    chat: RecordedChat,
    script: ChatScript,
    reqSignal: AbortSignal,
  ): Promise<Response> {
    let resolveClosed!: (v: "completed" | "client_closed") => void;
    chat.closed = new Promise((r) => (resolveClosed = r));
    const finish = (how: "completed" | "client_closed") => {
      if (chat.end !== null) return;
      chat.end = how;
      life.signal.removeEventListener("abort", onGone);
      resolveClosed(how);
    };
    if (script.kind === "error") {
      finish("completed");
      if (script.delayMs) await sleep(script.delayMs, reqSignal);
      return new Response(script.body, {
        status: script.status,
        headers: { "content-type": "application/json; charset=utf-8" },
      });
    }
    const gone = new AbortController();
    function onGone() {
      gone.abort();
      finish("client_closed");
    }
    reqSignal.addEventListener("abort", onGone, { once: true });
    life.signal.addEventListener("abort", onGone, { once: true });
    const steps = script.steps[Symbol.iterator]();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (;;) {
          if (gone.signal.aborted) return;
          const it = steps.next();
          if (it.done) {
            finish("completed");
            controller.close();
            return;
          }
          const s = it.value;
          if ("delayMs" in s) {
            await sleep(s.delayMs, gone.signal);
            continue;
          }
          if ("hang" in s) {
            await sleep(2 ** 31 - 1, gone.signal);
            return;
          }
          const line = "frame" in s ? JSON.stringify(s.frame) + "\n" : s.raw;
          chat.framesSent++;
          controller.enqueue(enc.encode(line));
          return;
        }
      },
      cancel() {
        onGone();
      },
    }, { highWaterMark: 0 });
    return new Response(body, {
      status: 200,
      headers: { "content-type": "application/x-ndjson" },
    });
  }

  async function handler(req: Request): Promise<Response> {
    const url = new URL(req.url);
    let body: any = null;
    if (req.method === "POST" || req.method === "DELETE") {
      try {
        body = JSON.parse(await req.text());
      } catch {
        body = null;
      }
    }
    const rec: RecordedRequest = {
      method: req.method,
      path: url.pathname,
      headers: Object.fromEntries(req.headers),
      body,
      at: Date.now(),
    };
    requests.push(rec);
    if (requests.length > maxRecorded) requests.shift();
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case "GET /":
      case "HEAD /":
        return new Response("Ollama is running", {
          headers: { "content-type": "text/plain; charset=utf-8" },
        });
      case "GET /api/version":
        return jsonResponse(
          state.versionStatus === 200 ? { version: state.version } : { error: "internal error" },
          state.versionStatus,
        );
      case "GET /api/tags":
        return jsonResponse(tagsBody(state.models));
      case "POST /api/show": {
        const name = body?.model ?? body?.name;
        const m = typeof name === "string" ? state.models[name] : undefined;
        if (!m) return jsonResponse({ error: `model '${name}' not found` }, 404);
        stats.showsInFlight++;
        stats.maxShowsInFlight = Math.max(stats.maxShowsInFlight, stats.showsInFlight);
        try {
          if (m.showDelayMs) await sleep(m.showDelayMs, req.signal);
        } finally {
          stats.showsInFlight--;
        }
        if (m.showRaw !== undefined) {
          return new Response(m.showRaw, {
            headers: { "content-type": "application/json; charset=utf-8" },
          });
        }
        return jsonResponse(showBody(name, m, body?.verbose === true));
      }
      case "POST /api/pull": {
        const name = body?.model ?? body?.name;
        const pull: RecordedPull = {
          ...rec,
          model: typeof name === "string" ? name : "",
          linesSent: 0,
          closed: Promise.resolve("completed"),
          end: null,
        };
        pulls.push(pull);
        if (pulls.length > maxRecorded) pulls.shift();
        return pullResponse(pull, req.signal);
      }
      case "DELETE /api/delete": {
        const name = body?.model ?? body?.name;
        if (typeof name !== "string" || !state.models[name]) {
          return jsonResponse({ error: `model '${name}' not found` }, 404);
        }
        delete state.models[name];
        return new Response(null, { status: 200 });
      }
      case "POST /api/chat": {
        const model = typeof body?.model === "string" ? body.model : "";
        const chat: RecordedChat = {
          ...rec,
          model,
          closed: Promise.resolve("completed"),
          end: null,
          framesSent: 0,
        };
        chats.push(chat);
        if (chats.length > maxRecorded) chats.shift();
        for (let i = chatWaiters.length - 1; i >= 0; i--) {
          if (chatWaiters[i].n === chats.length - 1) chatWaiters.splice(i, 1)[0].resolve(chat);
        }
        if (body === null) return jsonResponse({ error: "invalid request" }, 400);
        if (!state.models[model]) return jsonResponse({ error: `model '${model}' not found` }, 404);
        const src = queue.shift() ?? defaultScript;
        const script = typeof src === "function" ? src(chat) : src;
        return chatResponse(chat, script, req.signal);
      }
      default:
        return new Response("404 page not found", {
          status: 404,
          headers: { "content-type": "text/plain" },
        });
    }
  }

  const listening = Promise.withResolvers<void>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: opts.port ?? 0,
    signal: life.signal,
    onListen: () => listening.resolve(),
  }, handler);
  await listening.promise;
  const port = server.addr.port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    chats,
    pulls,
    get maxShowsInFlight() {
      return stats.maxShowsInFlight;
    },
    get pullable() {
      return state.pullable;
    },
    set pullable(p) {
      state.pullable = p;
    },
    get models() {
      return state.models;
    },
    set models(m) {
      state.models = m;
    },
    get version() {
      return state.version;
    },
    set version(v) {
      state.version = v;
    },
    get versionStatus() {
      return state.versionStatus;
    },
    set versionStatus(s) {
      state.versionStatus = s;
    },
    enqueue(...scripts) {
      queue.push(...scripts);
    },
    setDefault(script) {
      defaultScript = script;
    },
    get queued() {
      return queue.length;
    },
    waitForChat(n, timeoutMs = 5000) {
      if (chats[n]) return Promise.resolve(chats[n]);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`chat ${n} did not arrive`)), timeoutMs);
        chatWaiters.push({
          n,
          resolve: (c) => {
            clearTimeout(t);
            resolve(c);
          },
        });
      });
    },
    finished: server.finished,
    async close() {
      life.abort();
      await server.finished;
    },
  };
}
