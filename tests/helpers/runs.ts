/**
 * Test harness for Runs end to end: a real server child process against an
 * in-process scripted Ollama, a logged-in API client, and an SSE reader that
 * parses `id:`/`event:`/`data:` frames exactly as a browser's EventSource.
 */
import { type Api, apiClient } from "./agents_api.ts";
import { login, type LoginSession } from "./login.ts";
import { type ServerHandle, startTestServer } from "./server.ts";
import { type FakeOllama, startFakeOllama } from "../../tools/fake_ollama/server.ts";

export interface RunHarness {
  server: ServerHandle;
  ollama: FakeOllama;
  session: LoginSession;
  api: Api;
  agent: string;
  close(): Promise<void>;
}

export interface SseFrame {
  id: string | null;
  event: string;
  // deno-lint-ignore no-explicit-any
  data: any;
}

/** Waits until /health reports the model available (qualification is asynchronous). */
export async function waitForModel(url: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const h = await (await fetch(`${url}/health`)).json();
    if (h.model === "available") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("model never became available");
}

export async function startRunHarness(
  opts: { home?: string; ollama?: FakeOllama; env?: Record<string, string>; args?: string[] } = {},
) {
  const ollama = opts.ollama ?? await startFakeOllama();
  const server = await startTestServer({
    home: opts.home,
    args: ["--ollama", ollama.url, ...(opts.args ?? [])],
    env: opts.env,
  });
  await waitForModel(server.url);
  const session = await login(server);
  const api = apiClient(server, session);
  const agent = "00000000-0000-4000-8000-000000000001";
  return {
    server,
    ollama,
    session,
    api,
    agent,
    async close() {
      await server.stop();
      if (!opts.ollama) await ollama.close();
    },
  } satisfies RunHarness;
}

export async function newConversation(h: RunHarness): Promise<string> {
  const r = await h.api("POST", `/api/agents/${h.agent}/sessions`, { title: "t" });
  if (r.status !== 201) throw new Error(`create conversation: ${r.status}`);
  return r.body.session.id;
}

export async function submit(
  h: RunHarness,
  conv: string,
  message: string,
): Promise<{ status: number; body: any }> {
  return await h.api("POST", `/api/agents/${h.agent}/sessions/${conv}/runs`, { message });
}

/** Reads an SSE stream to its end (or `until` returns true); returns the parsed frames. */
export async function readSse(
  h: RunHarness,
  runId: string,
  opts: {
    lastEventId?: string;
    until?: (f: SseFrame) => boolean;
    timeoutMs?: number;
    /** Called once the response headers arrived (the stream is attached). */
    opened?: () => void;
  } = {},
): Promise<SseFrame[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs ?? 20_000);
  const headers: Record<string, string> = { cookie: h.session.cookie };
  if (opts.lastEventId) headers["last-event-id"] = opts.lastEventId;
  const res = await fetch(`${h.server.url}/api/agents/${h.agent}/runs/${runId}/events`, {
    headers,
    signal: ac.signal,
  });
  if (res.status !== 200) {
    clearTimeout(timer);
    throw new Error(`events: ${res.status} ${await res.text()}`);
  }
  opts.opened?.();
  const frames: SseFrame[] = [];
  const dec = new TextDecoder();
  let buf = "";
  try {
    for await (const chunk of res.body!) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (block.startsWith(":")) continue;
        let id: string | null = null;
        let event = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) id = line.slice(4);
          else if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        const f = { id, event, data: JSON.parse(data) };
        frames.push(f);
        if (opts.until?.(f)) {
          ac.abort();
          return frames;
        }
      }
    }
  } catch (err) {
    if (!(err instanceof DOMException && err.name === "AbortError") || !opts.until) throw err;
  } finally {
    clearTimeout(timer);
  }
  return frames;
}

export const isTerminal = (f: SseFrame) =>
  f.event === "run.completed" || f.event === "run.failed" || f.event === "run.cancelled";

/** Polls the Conversation detail until the Turn of `runId` is no longer running. */
export async function waitTurn(h: RunHarness, conv: string, runId: string): Promise<any> {
  const end = Date.now() + 20_000;
  while (Date.now() < end) {
    const d = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    const turns = d.body.turns ?? d.body.session?.turns ?? [];
    const t = turns.find((x: { run_id: string }) => x.run_id === runId);
    if (t && t.state !== "running") return t;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("turn did not finish");
}
