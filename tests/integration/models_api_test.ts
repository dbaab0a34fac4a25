/**
 * Models end to end on the real server against the scripted fleet [MB-10..14]:
 * /api/models lists the fleet with states and windows; a Turn on model B after
 * a Turn on model A sends each its own profile (asserted on the request the
 * scripted Ollama received); reasoning streams live, is committed once and
 * never reaches the answer or the next Turn's history; the Agent's
 * default_model_id / reasoning are set by PATCH (unknown ids refused with
 * nothing written); a vanished model fails its Run model_unavailable and is
 * marked; pull progress reaches an SSE client, a cancel stops it, the error
 * path shows Ollama's message; delete is refused while a Run uses the model.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  waitTurn,
} from "../helpers/runs.ts";
import {
  contentFrame,
  doneFrame,
  FAKE_FLEET,
  type FakeModel,
  thinkingFrame,
  toolCallFrame,
} from "../../tools/fake_ollama/frames.ts";
import { REASONING_MARKER } from "../../runtime/model/reasoning.ts";
import { REASONING_DROPPED_MARKER } from "../../runtime/runs/model_call.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { DENO, REPO, RUN_FLAGS } from "../helpers/server.ts";
import { makeTempHome } from "../helpers/home.ts";

async function withFleet(fn: (h: RunHarness) => Promise<void>, args: string[] = []) {
  const ollama = await startFakeOllama({
    models: structuredClone(FAKE_FLEET) as Record<string, FakeModel>,
    pullable: {
      "phi4-mini:3.8b": {
        model: { arch: "phi3", contextLength: 131072, capabilities: ["completion", "tools"] },
        steps: 8,
        stepDelayMs: 60,
      },
      "slow:7b": { model: FAKE_FLEET["llama3.2:3b"], steps: 1000, stepDelayMs: 100 },
      "broken:1b": {
        model: FAKE_FLEET["gemma3:1b"],
        steps: 6,
        failAt: 2,
        errorMessage: "max retries exceeded: unexpected EOF",
      },
      "noisy:1b": { model: FAKE_FLEET["gemma3:1b"], failAt: 0, errorMessage: "x".repeat(257) },
      "burst:1b": { model: FAKE_FLEET["gemma3:1b"], steps: 400 },
    },
  });
  const h = await startRunHarness({ ollama, args });
  try {
    await fn(h);
  } finally {
    await h.close();
    await ollama.close();
  }
}

/**
 * Submits a Turn. The previous Run of the Conversation may still be settling
 * (its terminal is on the stream a moment before it leaves the active set), so
 * a 409 conversation_busy is waited out (bounded) before the answer counts.
 */
async function submitIdle(h: RunHarness, conv: string, body: Record<string, unknown>) {
  const end = Date.now() + 20_000;
  for (;;) {
    const r = await h.api("POST", `/api/agents/${h.agent}/sessions/${conv}/runs`, body);
    if (codeOf(r) !== "conversation_busy" || Date.now() > end) return r;
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function turn(h: RunHarness, conv: string, body: Record<string, unknown>) {
  const r = await submitIdle(h, conv, body);
  assertEquals(r.status, 202, JSON.stringify(r.body));
  const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
  return { runId: r.body.run_id as string, frames };
}

const kinds = (f: SseFrame[]) => f.map((x) => x.event);

/** Reads a pull's SSE stream to its end. */
async function pullEvents(h: RunHarness, id: string): Promise<Array<{ event: string; data: any }>> {
  const res = await fetch(`${h.server.url}/api/models/pulls/${id}/events`, {
    headers: { cookie: h.session.cookie },
  });
  assertEquals(res.status, 200);
  const text = await res.text();
  return text.split("\n\n").filter((b) => b.startsWith("event: ")).map((b) => {
    const [ev, data] = b.split("\n");
    return { event: ev.slice(7), data: JSON.parse(data.slice(6)) };
  });
}

Deno.test("the API lists the fleet; a Turn on model B after model A sends each its profile, num_ctx and tools as the model allows", async () => {
  await withFleet(async (h) => {
    const list = await h.api("GET", "/api/models");
    assertEquals(
      list.body.models.map((m: any) => [m.id, m.state, m.window, m.budget, m.default]),
      [
        ["deepseek-r1:1.5b", "chat_only", 32768, 28672, false],
        ["gemma3:1b", "chat_only", 8192, 6144, false],
        ["llama3.2:3b", "ready", 32768, 28672, false],
        ["qwen3.5:2b", "ready", 32768, 28672, true],
      ],
    );
    assert(!JSON.stringify(list.body).includes(String(h.ollama.port)));
    // The operator's own --ollama origin is readable with a session only (for the banner).
    const ep = await h.api("GET", "/api/models/endpoint");
    assertEquals(ep.body, { url: h.ollama.url });
    const anon = await fetch(`${h.server.url}/api/models/endpoint`);
    await anon.body?.cancel();
    assertEquals(anon.status, 401);
    const conv = await newConversation(h);
    h.ollama.enqueue(sc.text("Answer from A."), sc.text("Answer from B."));
    const a = await turn(h, conv, { message: "first", model_id: "llama3.2:3b" });
    const b = await turn(h, conv, { message: "second", model_id: "gemma3:1b" });
    assertEquals(kinds(a.frames).at(-1), "run.completed");
    assertEquals(kinds(b.frames).at(-1), "run.completed");
    const [ra, rb] = h.ollama.chats.map((c) => c.body);
    assertEquals(ra.model, "llama3.2:3b");
    assertEquals(ra.options.num_ctx, 32768);
    assert(Array.isArray(ra.tools) && ra.tools.length > 0, "a ready model gets its tools");
    assertEquals(ra.options.temperature, 0); // the tool-selection phase
    assertEquals(rb.model, "gemma3:1b");
    assertEquals(rb.options, { seed: 0, num_ctx: 8192, num_predict: 2048 });
    assertEquals("tools" in rb, false);
    assertEquals("think" in rb, false);
    const startedA = a.frames.find((f) => f.event === "run.started")!.data.payload;
    const startedB = b.frames.find((f) => f.event === "run.started")!.data.payload;
    assertEquals([startedA.model_id, startedA.chat_only], ["llama3.2:3b", undefined]);
    assertEquals([startedB.model_id, startedB.chat_only, startedB.tool_ids], [
      "gemma3:1b",
      true,
      [],
    ]);
    assertEquals(startedB.window, 8192);
    // B's request carries A's answer as history.
    assert(JSON.stringify(rb.messages).includes("Answer from A."));
  });
});

Deno.test("reasoning streams live, is committed once, and never reaches the answer or the next Turn's history", async () => {
  await withFleet(async (h) => {
    const conv = await newConversation(h);
    h.ollama.enqueue(sc.thinking(), sc.text("Second answer."));
    const a = await turn(h, conv, { message: "hello", model_id: "deepseek-r1:1.5b" });
    const live = a.frames.filter((f) => f.event === "assistant.reasoning.delta");
    assert(live.length >= 1, kinds(a.frames).join());
    assertEquals(
      live.map((f) => f.data.payload.text).join(""),
      "The user greets me. I should answer briefly.",
    );
    const committed = a.frames.filter((f) => f.event === "assistant.reasoning.completed");
    assertEquals(committed.length, 1);
    assertEquals(committed[0].data.payload.text, "The user greets me. I should answer briefly.");
    assertEquals(committed[0].data.payload.truncated, false);
    const done = a.frames.find((f) => f.event === "assistant.block.completed")!;
    assertEquals(done.data.payload.text, "Hi there!");
    assertEquals(h.ollama.chats[0].body.think, true); // reasoning on by default
    await turn(h, conv, { message: "again", model_id: "deepseek-r1:1.5b" });
    const history = JSON.stringify(h.ollama.chats[1].body.messages);
    assert(history.includes("Hi there!") && !history.includes("greets me"), history);
    // The durable journal keeps the committed reasoning (no live deltas).
    const replay = await readSse(h, a.runId, { lastEventId: "d1" });
    assertEquals(replay.filter((f) => f.event === "assistant.reasoning.delta").length, 0);
  });
});

Deno.test("a Run keeps at most 64 KiB of reasoning: later calls commit only a marker and the Run completes", async () => {
  await withFleet(async (h) => {
    const conv = await newConversation(h);
    const thought = "Considering the files one by one, carefully. ".repeat(900); // ≈ 40 KB: cut
    const call = (n: number) => ({
      id: `call_${n}`,
      name: "file__stat",
      arguments: { path: "agent-builder.md" },
    });
    const script = (end: "tool" | "answer", n: number) => (c: { model: string }) => ({
      kind: "stream" as const,
      steps: [
        { frame: thinkingFrame(c.model, thought) },
        end === "tool"
          ? { frame: toolCallFrame(c.model, [call(n)]) }
          : { frame: contentFrame(c.model, "All done.") },
        { frame: doneFrame(c.model) },
      ],
    });
    h.ollama.enqueue(script("tool", 1), script("tool", 2), script("answer", 3));
    const t = await turn(h, conv, { message: "look around", model_id: "qwen3.5:2b" });
    assertEquals(kinds(t.frames).at(-1), "run.completed");
    const committed = t.frames.filter((f) => f.event === "assistant.reasoning.completed")
      .map((f) => f.data.payload);
    assertEquals(committed.map((p) => [p.call, p.truncated]), [[1, true], [2, true], [3, true]]);
    assert(
      committed[0].text.endsWith(REASONING_MARKER) && committed[1].text.endsWith(REASONING_MARKER),
    );
    assertEquals(committed[2].text, REASONING_DROPPED_MARKER);
    const done = t.frames.filter((f) => f.event === "assistant.block.completed").at(-1)!;
    assertEquals(done.data.payload.text, "All done.");
  });
});

Deno.test("PATCH sets the Agent's default model and reasoning; unknown or malformed ids are refused with nothing written", async () => {
  await withFleet(async (h) => {
    const path = `/api/agents/${h.agent}`;
    for (const bad of ["nope:1b", "BAD name", "nomic-embed-text:latest", "x".repeat(300)]) {
      const r = await h.api("PATCH", path, { default_model_id: bad, reasoning: false });
      assertEquals([r.status, codeOf(r)], [422, "model_unknown"], bad);
    }
    const before = await h.api("GET", path);
    assertEquals([before.body.agent.default_model_id, before.body.agent.reasoning], [null, true]);
    const ok = await h.api("PATCH", path, {
      default_model_id: "deepseek-r1:1.5b",
      reasoning: false,
    });
    assertEquals(ok.status, 200);
    assertEquals([ok.body.agent.default_model_id, ok.body.agent.reasoning], [
      "deepseek-r1:1.5b",
      false,
    ]);
    const conv = await newConversation(h);
    h.ollama.enqueue(sc.text("ok"));
    const t = await turn(h, conv, { message: "hi" });
    assertEquals(
      t.frames.find((f) => f.event === "run.started")!.data.payload.model_id,
      "deepseek-r1:1.5b",
    );
    assertEquals([h.ollama.chats[0].body.model, h.ollama.chats[0].body.think], [
      "deepseek-r1:1.5b",
      false,
    ]);
    for (const bad of ["nope:1b", "Bad!"]) {
      const r = await submitIdle(h, conv, {
        message: "x",
        model_id: bad,
      });
      assertEquals([r.status, codeOf(r)], [422, "model_unknown"], bad);
    }
    const d = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    assertEquals((d.body.turns ?? d.body.session?.turns).length, 1, "nothing written");
    assertEquals(h.ollama.chats.length, 1);
  });
});

Deno.test("a model that vanished between Turns fails the Run model_unavailable and is marked, never substituted", async () => {
  await withFleet(async (h) => {
    const conv = await newConversation(h);
    h.ollama.enqueue(sc.text("first"));
    await turn(h, conv, { message: "one", model_id: "gemma3:1b" });
    delete h.ollama.models["gemma3:1b"];
    const t = await turn(h, conv, { message: "two", model_id: "gemma3:1b" });
    const failed = t.frames.find((f) => f.event === "run.failed")!;
    assertEquals(failed.data.payload.code, "model_unavailable");
    assertEquals(h.ollama.chats.map((c) => c.model), ["gemma3:1b", "gemma3:1b"]);
    const g = (await h.api("GET", "/api/models")).body.models.find((m: any) =>
      m.id === "gemma3:1b"
    );
    assertEquals([g.state, g.reason], ["unavailable", "model_missing"]);
    const again = await submitIdle(h, conv, {
      message: "three",
      model_id: "gemma3:1b",
    });
    assertEquals([again.status, codeOf(again)], [503, "model_unavailable"]);
    assertEquals(h.ollama.chats.length, 2, "no other model answered");
  });
});

Deno.test("pull progress reaches an SSE client and the pulled model joins the catalog; a second pull is busy; host names are refused", async () => {
  await withFleet(async (h) => {
    for (const bad of ["registry.example/x/y:1", "localhost:5000/x", "Bad", "a/b/c/d"]) {
      const r = await h.api("POST", "/api/models/pull", { name: bad });
      assertEquals([r.status, codeOf(r)], [422, "model_name_invalid"], bad);
    }
    const p = await h.api("POST", "/api/models/pull", { name: "phi4-mini:3.8b" });
    assertEquals(p.status, 202);
    const busy = await h.api("POST", "/api/models/pull", { name: "gemma3:1b" });
    assertEquals([busy.status, codeOf(busy)], [409, "pull_busy"]);
    const ev = await pullEvents(h, p.body.pull_id);
    assertEquals(ev.at(-1), {
      event: "pull.succeeded",
      data: { kind: "pull.succeeded", name: "phi4-mini:3.8b" },
    });
    const progress = ev.filter((e) => e.event === "pull.progress").map((e) => e.data);
    assert(progress.some((d) => d.total === 1_000_000 && d.completed > 0), JSON.stringify(ev));
    // Coalesced, and the latest progress always goes out before the end.
    assertEquals(progress.at(-1), { kind: "pull.progress", status: "writing manifest" });
    const burst = await h.api("POST", "/api/models/pull", { name: "burst:1b" });
    const bev = await pullEvents(h, burst.body.pull_id);
    const bp = bev.filter((e) => e.event === "pull.progress");
    assert(bp.length < 20, `400 progress lines arrive coalesced, got ${bp.length}`);
    assertEquals(bev.at(-1)!.event, "pull.succeeded");
    const m = (await h.api("GET", "/api/models")).body.models.find((x: any) =>
      x.id === "phi4-mini:3.8b"
    );
    assertEquals([m.state, m.window], ["ready", 32768]);
    assertEquals(h.ollama.pulls[0].body, { model: "phi4-mini:3.8b", stream: true });
  });
});

Deno.test("a pull can be cancelled (the connection to Ollama closes) and an error line ends it with Ollama's short message or a fixed text", async () => {
  await withFleet(async (h) => {
    const p = await h.api("POST", "/api/models/pull", { name: "slow:7b" });
    const events = pullEvents(h, p.body.pull_id);
    while (h.ollama.pulls.length === 0 || h.ollama.pulls[0].linesSent < 2) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const c = await h.api("POST", `/api/models/pulls/${p.body.pull_id}/cancel`);
    assertEquals(c.status, 200);
    assertEquals((await events).at(-1)!.event, "pull.cancelled");
    assertEquals(await h.ollama.pulls[0].closed, "client_closed");
    const s = await h.api("GET", `/api/models/pulls/${p.body.pull_id}`);
    assertEquals(s.body.pull.state, "cancelled");

    const b = await h.api("POST", "/api/models/pull", { name: "broken:1b" });
    assertEquals(b.status, 202);
    assertEquals((await pullEvents(h, b.body.pull_id)).at(-1), {
      event: "pull.failed",
      data: { kind: "pull.failed", message: "max retries exceeded: unexpected EOF" },
    });
    const n = await h.api("POST", "/api/models/pull", { name: "noisy:1b" });
    assertEquals((await pullEvents(h, n.body.pull_id)).at(-1)!.data.message, "The pull failed.");
    const models = (await h.api("GET", "/api/models")).body.models.map((m: any) => m.id);
    assert(!models.includes("broken:1b") && !models.includes("slow:7b"), models.join());
  });
});

Deno.test("stopping the server cancels a running pull and ends its progress stream", async () => {
  await withFleet(async (h) => {
    const p = await h.api("POST", "/api/models/pull", { name: "slow:7b" });
    const events = pullEvents(h, p.body.pull_id);
    while (h.ollama.pulls.length === 0 || h.ollama.pulls[0].linesSent < 2) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(await h.server.stop(), 0);
    assertEquals((await events).at(-1)!.event, "pull.cancelled");
    assertEquals(await h.ollama.pulls[0].closed, "client_closed");
  });
});

Deno.test("delete removes a model on Ollama, and is refused with 409 while a Run uses it", async () => {
  await withFleet(async (h) => {
    const conv = await newConversation(h);
    h.ollama.enqueue(sc.stall());
    const r = await submitIdle(h, conv, {
      message: "hang",
      model_id: "llama3.2:3b",
    });
    await h.ollama.waitForChat(0, 60_000); // the Run's Worker starts first
    const busy = await h.api("DELETE", "/api/models/llama3.2%3A3b");
    assertEquals([busy.status, codeOf(busy)], [409, "model_in_use"]);
    await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
    await waitTurn(h, conv, r.body.run_id);
    const unknown = await h.api("DELETE", "/api/models/nope%3A1b");
    assertEquals([unknown.status, codeOf(unknown)], [422, "model_unknown"]);
    const del = await h.api("DELETE", "/api/models/llama3.2%3A3b");
    assertEquals(del.status, 200);
    assert(!del.body.models.some((m: any) => m.id === "llama3.2:3b"));
    const sent = h.ollama.requests.find((q) => q.method === "DELETE")!;
    assertEquals([sent.path, sent.body], ["/api/delete", { model: "llama3.2:3b" }]);
  });
});

Deno.test("serve --model restricts and orders the catalog, --default-model picks the default, --max-window caps windows", async () => {
  await withFleet(async (h) => {
    const list = await h.api("GET", "/api/models");
    assertEquals(list.body.models.map((m: any) => [m.id, m.state, m.default, m.window]), [
      ["qwen3.5:2b", "ready", false, 16384],
      ["gemma3:1b", "chat_only", true, 8192],
    ]);
    const refreshed = await h.api("POST", "/api/models/refresh");
    assertEquals(refreshed.body.models.map((m: any) => m.id), ["qwen3.5:2b", "gemma3:1b"]);
    const conv = await newConversation(h);
    h.ollama.enqueue(sc.text("ok"));
    const t = await turn(h, conv, { message: "hi" }); // the default model
    assertEquals(
      t.frames.find((f) => f.event === "run.started")!.data.payload.model_id,
      "gemma3:1b",
    );
    const other = await submitIdle(h, conv, {
      message: "x",
      model_id: "llama3.2:3b", // on Ollama, but not in this catalog
    });
    assertEquals([other.status, codeOf(other)], [422, "model_unknown"]);
  }, [
    "--model",
    "qwen3.5:2b",
    "--model=gemma3:1b",
    "--default-model",
    "gemma3:1b",
    "--max-window",
    "16384",
  ]);
});

Deno.test("serve refuses bad model flags as usage errors (exit 2)", async () => {
  const home = makeTempHome();
  const many = Array.from({ length: 33 }, (_, i) => ["--model", `m${i}`]).flat();
  for (
    const [why, args] of [
      ["33 models", many],
      ["bad name", ["--model", "Bad Name"]],
      ["duplicate", ["--model", "a", "--model", "a"]],
      ["default not listed", ["--model", "a", "--default-model", "b"]],
      ["window too small", ["--max-window", "4095"]],
      ["window not a number", ["--max-window", "lots"]],
    ] as const
  ) {
    const out = await new Deno.Command(DENO, {
      args: [...RUN_FLAGS, `${REPO}/main.ts`, "serve", "--port", "0", "--home", home, ...args],
      stdout: "piped",
      stderr: "piped",
      env: { DENO_NO_UPDATE_CHECK: "1" },
    }).output();
    assertEquals(out.code, 2, why);
    const err = new TextDecoder().decode(out.stderr);
    assert(/--(model|default-model|max-window)|model name/.test(err), `${why}: ${err}`);
  }
});
