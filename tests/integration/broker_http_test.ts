/**
 * The model surface of the real server (child process) [MB-1, MB-2, §13]:
 * `/health` reports the model as available once qualified against the scripted
 * Ollama, or unavailable with a fixed reason while the server stays up;
 * `GET /api/models` needs a session and returns public profiles without host
 * or port; a bad `--ollama` URL is a usage error.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { login } from "../helpers/login.ts";
import { DENO, freePort, REPO, RUN_FLAGS, startTestServer } from "../helpers/server.ts";
import { makeTempHome } from "../helpers/home.ts";

async function health(url: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${url}/health`);
  return await r.json();
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("with the scripted Ollama up, /health says model available and /api/models lists the public profile", async () => {
  const ollama = await startFakeOllama();
  const server = await startTestServer({ args: ["--ollama", ollama.url] });
  try {
    const h = await until(() => health(server.url), (v) => v.model === "available");
    assertEquals(h.model, "available");
    assertEquals("reason" in h, false);
    const anon = await fetch(`${server.url}/api/models`);
    await anon.body?.cancel();
    assertEquals(anon.status, 401);
    const s = await login(server);
    const r = await fetch(`${server.url}/api/models`, { headers: { cookie: s.cookie } });
    const text = await r.text();
    assertEquals(r.status, 200);
    assertEquals(r.headers.get("cache-control"), "no-store");
    assertEquals(JSON.parse(text), {
      models: [{
        id: "qwen3.5:2b",
        default: true,
        state: "ready",
        family: "qwen35",
        parameter_size: "2B",
        quantization: "Q4_K_M",
        available: true,
        window: 32768,
        budget: 28672,
        capabilities: ["completion", "tools", "thinking"],
      }],
    });
    assert(!text.includes(String(ollama.port)) && !text.includes("127.0.0.1"), "no host or port");
  } finally {
    await server.stop();
    await ollama.close();
  }
});

Deno.test("with Ollama down the server stays up, /health says unavailable with reason unreachable, and recovers once Ollama starts", async () => {
  const port = freePort();
  const server = await startTestServer({ args: ["--ollama", `http://127.0.0.1:${port}`] });
  let ollama;
  try {
    const h = await until(() => health(server.url), (v) => v.reason === "unreachable");
    assertEquals(h, {
      status: "ok",
      release: h.release,
      model: "unavailable",
      reason: "unreachable",
    });
    const s = await login(server);
    const r = await fetch(`${server.url}/api/models`, { headers: { cookie: s.cookie } });
    const body = await r.json();
    assertEquals(body.models[0].available, false);
    assertEquals(body.models[0].reason, "unreachable");
    ollama = await startFakeOllama({ port });
    const later = await until(() => health(server.url), (v) => v.model === "available", 15_000);
    assertEquals(later.model, "available");
  } finally {
    await server.stop();
    await ollama?.close();
  }
});

Deno.test("serve refuses an --ollama URL with a path or credentials as a usage error", async () => {
  const home = makeTempHome();
  for (
    const bad of [
      "http://127.0.0.1:11434/api",
      "http://u:p@127.0.0.1:11434",
      "https://127.0.0.1:11434",
    ]
  ) {
    const out = await new Deno.Command(DENO, {
      args: [
        ...RUN_FLAGS,
        `${REPO}/main.ts`,
        "serve",
        "--port",
        "0",
        "--home",
        home,
        "--ollama",
        bad,
      ],
      stdout: "piped",
      stderr: "piped",
      env: { DENO_NO_UPDATE_CHECK: "1" },
    }).output();
    assertEquals(out.code, 2, bad);
    const err = new TextDecoder().decode(out.stderr);
    assert(/--ollama/.test(err), err);
    assert(!/at .*\.ts:\d+/.test(err), "no stack trace");
  }
  await Deno.remove(home, { recursive: true });
});
