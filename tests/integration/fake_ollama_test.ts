/**
 * The scripted Ollama server itself speaks the real protocol: the endpoints
 * and body shapes Ollama serves, NDJSON chat frames ending in a `done:true`
 * frame with counts and durations, the per-request script queue, request
 * recording, and the `deno task fake-ollama` entry point.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { DENO, REPO } from "../helpers/server.ts";

async function chatLines(
  url: string,
  body: unknown,
): Promise<{ status: number; lines: any[]; type: string | null }> {
  const r = await fetch(`${url}/api/chat`, { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  return {
    status: r.status,
    type: r.headers.get("content-type"),
    lines: text.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)),
  };
}

Deno.test("the scripted server serves /, /api/version, /api/tags and /api/show like Ollama", async () => {
  const o = await startFakeOllama();
  try {
    const root = await fetch(`${o.url}/`);
    assertEquals(await root.text(), "Ollama is running");
    assertEquals(await (await fetch(`${o.url}/api/version`)).json(), { version: "0.12.10" });
    const tags = await (await fetch(`${o.url}/api/tags`)).json();
    assertEquals(tags.models.map((m: any) => m.name), ["qwen3.5:2b"]);
    assertEquals(tags.models[0].details.family, "qwen35");
    const show = await fetch(`${o.url}/api/show`, {
      method: "POST",
      body: JSON.stringify({ model: "qwen3.5:2b" }),
    });
    const s = await show.json();
    assertEquals(s.model_info["general.architecture"], "qwen35");
    assertEquals(s.model_info["qwen35.context_length"], 262144);
    assertEquals(s.capabilities, ["completion", "tools", "thinking"]);
    const missing = await fetch(`${o.url}/api/show`, {
      method: "POST",
      body: JSON.stringify({ model: "nope" }),
    });
    assertEquals(missing.status, 404);
    assertEquals(await missing.json(), { error: "model 'nope' not found" });
    assertEquals(o.requests.map((r) => `${r.method} ${r.path}`), [
      "GET /",
      "GET /api/version",
      "GET /api/tags",
      "POST /api/show",
      "POST /api/show",
    ]);
  } finally {
    await o.close();
  }
});

Deno.test("chat streams NDJSON frames and a final done frame with counts, from the queue then the default", async () => {
  const o = await startFakeOllama({ defaultScript: sc.text("default answer") });
  try {
    o.enqueue(sc.toolCallInDone([{ id: "call_1", name: "file/stat", arguments: { path: "a" } }]));
    const first = await chatLines(o.url, { model: "qwen3.5:2b", messages: [] });
    assertEquals(first.type, "application/x-ndjson");
    assertEquals(first.lines.length, 1);
    const done = first.lines[0];
    assertEquals(done.done, true);
    assertEquals(done.done_reason, "stop");
    assertEquals(done.message.tool_calls, [{
      id: "call_1",
      function: { index: 0, name: "file/stat", arguments: { path: "a" } },
    }]);
    for (
      const k of [
        "total_duration",
        "load_duration",
        "prompt_eval_count",
        "eval_count",
        "eval_duration",
      ]
    ) {
      assert(typeof done[k] === "number", k);
    }
    assertMatch(done.created_at, /^\d{4}-\d\d-\d\dT/);
    const second = await chatLines(o.url, { model: "qwen3.5:2b", messages: [] });
    assertEquals(
      second.lines.slice(0, -1).map((l) => l.message.content).join(""),
      "default answer",
    );
    assertEquals(second.lines.at(-1).done, true);
    assertEquals(o.chats.length, 2);
    assertEquals(await o.chats[1].closed, "completed");
    const unknown = await chatLines(o.url, { model: "llama3", messages: [] });
    assertEquals(unknown.status, 404);
    assertEquals(unknown.lines, [{ error: "model 'llama3' not found" }]);
  } finally {
    await o.close();
  }
});

Deno.test("deno task fake-ollama serves the chosen scenario on the given port", async () => {
  const child = new Deno.Command(DENO, {
    args: [
      "run",
      "--config",
      `${REPO}/deno.json`,
      "--allow-net",
      "--allow-read",
      `${REPO}/tools/fake_ollama/main.ts`,
      "--port",
      "0",
      "--scenario",
      "plain",
    ],
    stdout: "piped",
    stderr: "piped",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let out = "";
    while (!/listening on (http:\/\/127\.0\.0\.1:\d+)/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`exited: ${out}`);
      out += value;
    }
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1];
    const r = await chatLines(url, { model: "qwen3.5:2b", messages: [] });
    assertEquals(
      r.lines.slice(0, -1).map((l) => l.message.content).join(""),
      "Hello from the scripted Ollama.",
    );
  } finally {
    child.kill("SIGTERM");
    const status = await child.status;
    assertEquals(status.code, 0);
    await reader.cancel();
    await child.stderr.cancel();
  }
});

Deno.test("an unknown scenario name is a usage error", async () => {
  const out = await new Deno.Command(DENO, {
    args: [
      "run",
      "--config",
      `${REPO}/deno.json`,
      "--allow-net",
      "--allow-read",
      `${REPO}/tools/fake_ollama/main.ts`,
      "--scenario",
      "nope",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 2);
  assertMatch(new TextDecoder().decode(out.stderr), /unknown scenario/);
});

Deno.test("with maxRecorded the server keeps only the latest requests and chats", async () => {
  const o = await startFakeOllama({ maxRecorded: 2, defaultScript: sc.text("hi") });
  try {
    for (let i = 0; i < 3; i++) {
      await (await fetch(`${o.url}/api/version`)).body?.cancel();
    }
    for (let i = 0; i < 3; i++) {
      await chatLines(o.url, {
        model: "qwen3.5:2b",
        messages: [{ role: "user", content: `m${i}` }],
      });
    }
    assertEquals(o.requests.length, 2);
    assertEquals(o.chats.map((c) => c.body.messages[0].content), ["m1", "m2"]);
  } finally {
    await o.close();
  }
});

Deno.test("--scenario auto picks the scenario from trigger words and closes after a tool result", async () => {
  const o = await startFakeOllama({ defaultScript: sc.auto(0) });
  const ask = (messages: unknown[]) => chatLines(o.url, { model: "qwen3.5:2b", messages });
  const content = (lines: any[]) => lines.map((l) => l.message?.content ?? "").join("");
  const calls = (lines: any[]) =>
    lines.flatMap((l) => l.message?.tool_calls ?? []).map((c: any) => c.function.name);
  try {
    const read = await ask([{ role: "user", content: "Please READ the instructions" }]);
    assertEquals(calls(read.lines), ["file__read_text"], "the wire name the product advertises");
    assert(content(read.lines).length > 0, "a lead text block before the call");
    assertEquals(calls((await ask([{ role: "user", content: "write it down" }])).lines), [
      "file__write",
    ]);
    const closing = await ask([
      { role: "user", content: "read it" },
      { role: "tool", content: "line one\nline two" },
    ]);
    assertEquals(calls(closing.lines), []);
    assert(content(closing.lines).includes("line one"), content(closing.lines));
    const plain = await ask([{ role: "user", content: "already ready" }]);
    assertEquals(calls(plain.lines), [], "whole words only: 'already' is not 'read'");
    assertEquals(content(plain.lines), sc.MARKDOWN_ANSWER);
    for (const t of sc.AUTO_TRIGGERS) assert(sc.SCENARIOS.auto !== undefined && t.what.length > 0);
  } finally {
    await o.close();
  }
});

Deno.test("the tool scenarios call tools by their wire names", () => {
  for (const build of [sc.toolCall(), sc.multiToolCalls()]) {
    const script = typeof build === "function" ? build({ model: "m" } as never) : build;
    assert(script.kind === "stream");
    const names = [...script.steps].flatMap((s: any) => s.frame?.message?.tool_calls ?? [])
      .map((c: any) => c.function.name as string);
    assert(names.length > 0 && names.every((n) => /^[a-z]+__[a-z_]+$/.test(n)), names.join());
  }
});

Deno.test("deno task fake-ollama --fleet serves several models and pulls with progress, an error line, and delete", async () => {
  const child = new Deno.Command(DENO, {
    args: [
      "run",
      "--config",
      `${REPO}/deno.json`,
      "--allow-net",
      "--allow-read",
      `${REPO}/tools/fake_ollama/main.ts`,
      "--port",
      "0",
      "--fleet",
    ],
    stdout: "piped",
    stderr: "piped",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let out = "";
    while (!/listening on (http:\/\/127\.0\.0\.1:\d+)/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`exited: ${out}`);
      out += value;
    }
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1];
    const tags = await (await fetch(`${url}/api/tags`)).json();
    assertEquals(tags.models.map((m: any) => m.name).sort(), [
      "deepseek-r1:1.5b",
      "gemma3:1b",
      "llama3.2:3b",
      "nomic-embed-text:latest",
      "qwen3.5:2b",
    ]);
    const show = await (await fetch(`${url}/api/show`, {
      method: "POST",
      body: JSON.stringify({ model: "gemma3:1b" }),
    })).json();
    assertEquals([show.capabilities, show.model_info["gemma3.context_length"]], [
      ["completion"],
      8192,
    ]);
    const lines = async (name: string) =>
      (await (await fetch(`${url}/api/pull`, {
        method: "POST",
        body: JSON.stringify({ model: name }),
      })).text()).trim().split("\n").map((l) => JSON.parse(l));
    const broken = await lines("broken:1b");
    assertEquals(broken.at(-1), { error: "max retries exceeded: unexpected EOF" });
    assert(broken.some((l) => l.total > 0 && l.completed > 0));
    const ok = await lines("phi4-mini:3.8b");
    assertEquals(ok.at(-1), { status: "success" });
    const del = await fetch(`${url}/api/delete`, {
      method: "DELETE",
      body: JSON.stringify({ model: "phi4-mini:3.8b" }),
    });
    await del.body?.cancel();
    assertEquals(del.status, 200);
    const again = await fetch(`${url}/api/delete`, {
      method: "DELETE",
      body: JSON.stringify({ model: "phi4-mini:3.8b" }),
    });
    await again.body?.cancel();
    assertEquals(again.status, 404);
  } finally {
    child.kill("SIGTERM");
    const status = await child.status;
    assertEquals(status.code, 0);
    await reader.cancel();
    await child.stderr.cancel();
  }
});
