import { DENO, REPO, RUN_FLAGS, startTestServer } from "../helpers/server.ts";
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";

async function run(args: string[], cwd?: string) {
  const out = await new Deno.Command(DENO, {
    args: [...RUN_FLAGS, `${REPO}/main.ts`, ...args],
    cwd,
    stdin: "null",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("serve answers /health and the embedded UI with the right types and headers", async () => {
  const s = await startTestServer();
  try {
    const h = await fetch(`${s.url}/health`);
    assertEquals(h.status, 200);
    assertEquals(h.headers.get("content-type"), "application/json; charset=utf-8");
    assertEquals(h.headers.get("cache-control"), "no-store");
    assertEquals(h.headers.get("server"), null);
    const body = await h.json();
    assertEquals(body.status, "ok");
    assertMatch(body.model, /^(available|unavailable)$/);
    assert(!JSON.stringify(body).includes(s.home), "health must not leak paths");

    const page = await fetch(`${s.url}/`);
    assertEquals(page.headers.get("content-type"), "text/html; charset=utf-8");
    const html = await page.text();
    assert(html.includes('id="app"'));
    assert(!/<script(?![^>]*\bsrc=)[^>]*>/.test(html), "no inline script");
    assertMatch(page.headers.get("content-security-policy")!, /script-src 'self'/);
    assertEquals(page.headers.get("x-frame-options"), "DENY");
    assertEquals(page.headers.get("x-content-type-options"), "nosniff");
    assertEquals(page.headers.get("referrer-policy"), "no-referrer");

    const js = await fetch(`${s.url}/assets/app.js`);
    assertEquals(js.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert((await js.text()).length > 1000);
    const css = await fetch(`${s.url}/assets/app.css`);
    assertEquals(css.headers.get("content-type"), "text/css; charset=utf-8");
    await css.body?.cancel();

    const missing = await fetch(`${s.url}/assets/../../etc/passwd`);
    assertEquals(missing.status, 404);
    assertEquals((await missing.json()).error.code, "not_found");
    const wrong = await fetch(`${s.url}/health`, { method: "DELETE" });
    assertEquals(wrong.status, 405);
    assertEquals((await wrong.json()).error.code, "method_not_allowed");
  } finally {
    assertEquals(await s.stop(), 0);
  }
});

Deno.test("serve creates a private home layout", async () => {
  const s = await startTestServer();
  try {
    for (
      const rel of [
        "data",
        "data/agents",
        ".runtime/secrets",
        ".runtime/control-plane",
        ".runtime/agents",
        ".runtime/recovery",
      ]
    ) {
      const st = Deno.lstatSync(`${s.home}/${rel}`);
      assert(st.isDirectory, rel);
      assertEquals(st.mode! & 0o777, 0o700, rel);
    }
    assertEquals(Deno.statSync(`${s.home}/data/agent-registry.sqlite`).mode! & 0o777, 0o600);
  } finally {
    await s.stop();
  }
});

Deno.test("a second serve on the same home is refused and SIGTERM releases the lock", async () => {
  const s = await startTestServer();
  const second = await run(["serve", "--port", "0", "--home", s.home]);
  assertEquals(second.code, 3);
  assertMatch(second.stderr, /another server is already running/);
  const pid = JSON.parse(Deno.readTextFileSync(`${s.home}/.runtime/control-plane/server.pid`));
  assertEquals(pid.pid, s.child.pid);
  assertEquals(await s.stop(), 0);
  assertMatch(s.output(), /agent-builder stopped/);
  // The lock is free again: a new server starts on the same home.
  const again = await startTestServer({ home: s.home });
  assertEquals(await again.stop(), 0);
});

Deno.test("the CLI prints help, version, and refuses unknown commands and options", async () => {
  const help = await run(["help"]);
  assertEquals(help.code, 0);
  assertMatch(help.stdout, /serve \[--host 127\.0\.0\.1\] \[--port 20815\]/);
  assert(!/^\s*(worker|runner)\b/m.test(help.stdout), "internal modes stay undocumented");
  const version = await run(["version"]);
  assertEquals(version.code, 0);
  assertMatch(version.stdout, /^\d+\.\d+\.\d+\n$/);
  const unknown = await run(["frobnicate"]);
  assertEquals(unknown.code, 2);
  const badFlag = await run(["serve", "--bogus"]);
  assertEquals(badFlag.code, 2);
  assertMatch(badFlag.stderr, /unknown option --bogus/);
  const badPort = await run(["serve", "--port", "70000", "--home", makeTempHome()]);
  assertEquals(badPort.code, 2);
  const shared = makeTempHome();
  Deno.chmodSync(shared, 0o777);
  const unsafe = await run(["serve", "--port", "0", "--home", shared]);
  assertEquals(unsafe.code, 1);
  assertMatch(unsafe.stderr, /^agent-builder serve: unsafe_path — group\/world-writable: /);
  assert(!/\bat \w+ \(/.test(unsafe.stderr), "no stack trace for a refused home");
});

Deno.test("doctor reports host capabilities and model qualification, exit 0 when sandboxable", async () => {
  const fake = await startFakeOllama();
  try {
    const r = await run(["doctor", "--json", "--ollama", fake.url, "--home", makeTempHome()]);
    const report = JSON.parse(r.stdout);
    assertEquals(typeof report.sandboxable, "boolean");
    assertEquals(r.code, report.sandboxable ? 0 : 1);
    // This project's supported hosts (and CI) have Landlock >= 6 and seccomp.
    assert(report.landlockAbi >= 6, `landlock ABI ${report.landlockAbi}`);
    assertEquals(report.seccomp, true);
    assertEquals(report.model.available, true);
    assertEquals(report.model.profile.window, 32768);
    assertEquals(report.model.profile.budget, 28672);
  } finally {
    await fake.close();
  }
});

Deno.test("doctor says the model is unavailable without failing when Ollama is down", async () => {
  const port = (() => {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const p = (l.addr as Deno.NetAddr).port;
    l.close();
    return p;
  })();
  const r = await run(["doctor", "--ollama", `http://127.0.0.1:${port}`, "--home", makeTempHome()]);
  assertMatch(r.stdout, /NO {2}model {5}qwen3\.5:2b unavailable \(unreachable\)/);
  assertEquals(r.code, 0);
});
