/**
 * `rotate-token` [GW-2], driven through a real pseudo-terminal against a real
 * running server: the value is read twice without echo, written privately,
 * and the running server ends every existing session immediately; the old
 * token stops working and the new one logs in. Non-TTY stdin is refused.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { login, readBootstrapToken } from "../helpers/login.ts";
import { runInPty } from "../helpers/pty.ts";
import { DENO, REPO, RUN_FLAGS, type ServerHandle, startTestServer } from "../helpers/server.ts";

const TOKEN_PATH = ".runtime/secrets/web-bootstrap-token";

/** Deno arguments for `main.ts rotate-token` (without the executable). */
function rotateArgs(home: string, ...extra: string[]): string[] {
  return [...RUN_FLAGS, `${REPO}/main.ts`, "rotate-token", "--home", home, ...extra];
}

/** Full argv for the pty driver's execve. */
function rotateArgv(home: string): string[] {
  return [DENO, ...rotateArgs(home)];
}

async function sessionStatus(server: ServerHandle, cookie: string): Promise<number> {
  const r = await fetch(`${server.url}/api/session`, { headers: { cookie } });
  await r.body?.cancel();
  return r.status;
}

async function loginStatus(server: ServerHandle, token: string): Promise<number> {
  const r = await fetch(`${server.url}/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.origin },
    body: JSON.stringify({ token }),
  });
  await r.body?.cancel();
  return r.status;
}

async function waitForLog(home: string, pattern: RegExp, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      if (pattern.test(Deno.readTextFileSync(`${home}/.runtime/control-plane/server.log`))) {
        return true;
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

Deno.test("rotate-token through a pty logs out live sessions at once; old token fails, new token works", async () => {
  const server = await startTestServer();
  try {
    const oldToken = readBootstrapToken(server.home);
    const a = await login(server);
    const b = await login(server);
    assertEquals(await sessionStatus(server, a.cookie), 200);
    const newToken = "Operator.New-token_~+42";
    const r = await runInPty(rotateArgv(server.home), [
      { expect: "New token", send: `${newToken}\r` },
      { expect: "Repeat", send: `${newToken}\r` },
    ], { DENO_NO_UPDATE_CHECK: "1" });
    assertEquals(r.code, 0, r.output);
    assert(!r.output.includes(newToken), "the typed token must not be echoed");
    assert(!r.output.includes(oldToken), "the old token must not be shown");
    assertMatch(r.output, /Signalled the running server/);
    // The SIGHUP reload happens without any further request reaching the server.
    assert(
      await waitForLog(server.home, /gateway\.token_reloaded.*"sessions_ended":2/),
      "server reloaded on SIGHUP",
    );
    assertEquals(await sessionStatus(server, a.cookie), 401);
    assertEquals(await sessionStatus(server, b.cookie), 401);
    assertEquals(await loginStatus(server, oldToken), 401);
    assertEquals(await loginStatus(server, newToken), 200);
    const info = Deno.lstatSync(`${server.home}/${TOKEN_PATH}`);
    assertEquals(info.mode! & 0o777, 0o600);
    assertEquals(readBootstrapToken(server.home), newToken);
    const leftovers = [...Deno.readDirSync(`${server.home}/.runtime/secrets`)].map((e) => e.name);
    assertEquals(leftovers, ["web-bootstrap-token"]);
    assertEquals(await server.stop(), 0);
    const log = Deno.readTextFileSync(`${server.home}/.runtime/control-plane/server.log`);
    for (const secret of [oldToken, newToken]) {
      assert(!log.includes(secret) && !server.output().includes(secret), "no token in logs");
    }
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("rotate-token refuses mismatched, short or badly formed entries and keeps the old token", async () => {
  const server = await startTestServer();
  try {
    const oldToken = readBootstrapToken(server.home);
    const s = await login(server);
    const cases: [string, string, RegExp][] = [
      ["abcdefghijk", "abcdefghijX", /differ/],
      ["short", "short", /10\.\.128/],
      ["has space in it", "has space in it", /10\.\.128/],
      ["x".repeat(129), "x".repeat(129), /10\.\.128/],
    ];
    for (const [first, second, why] of cases) {
      const r = await runInPty(rotateArgv(server.home), [
        { expect: "New token", send: `${first}\r` },
        { expect: "Repeat", send: `${second}\r` },
      ], { DENO_NO_UPDATE_CHECK: "1" });
      assertEquals(r.code, 1, r.output);
      assertMatch(r.output, why);
      assert(!r.output.includes(first), "entry not echoed");
    }
    assertEquals(readBootstrapToken(server.home), oldToken);
    assertEquals(await sessionStatus(server, s.cookie), 200);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("rotate-token refuses a non-TTY stdin and never reads the value from argv or env", async () => {
  const server = await startTestServer();
  try {
    const oldToken = readBootstrapToken(server.home);
    const child = new Deno.Command(DENO, {
      args: rotateArgs(server.home),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { DENO_NO_UPDATE_CHECK: "1", AGENT_BUILDER_TOKEN: "EnvToken12345" },
    }).spawn();
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode("PipedToken123\nPipedToken123\n"));
    await w.close();
    const out = await child.output();
    assertEquals(out.code, 2);
    assertMatch(new TextDecoder().decode(out.stderr), /not a terminal/);
    // A value typed on the command line is refused as a usage error (not merely as a
    // non-TTY stdin) and never repeated back.
    for (const arg of ["ArgvToken12345", "--token=ArgvToken12345"]) {
      const extra = await new Deno.Command(DENO, {
        args: rotateArgs(server.home, arg),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        env: { DENO_NO_UPDATE_CHECK: "1" },
      }).output();
      const said = new TextDecoder().decode(extra.stdout) + new TextDecoder().decode(extra.stderr);
      assertEquals(extra.code, 2, `${arg} is a usage error`);
      assertMatch(said, /never read from the command line/);
      assert(!said.includes("ArgvToken12345"), "the argv value is not echoed");
    }
    assertEquals(readBootstrapToken(server.home), oldToken);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("rotate-token --generate writes a fresh 256-bit token without printing it and ends sessions", async () => {
  const server = await startTestServer();
  try {
    const oldToken = readBootstrapToken(server.home);
    const s = await login(server);
    const out = await new Deno.Command(DENO, {
      args: rotateArgs(server.home, "--generate"),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { DENO_NO_UPDATE_CHECK: "1" },
    }).output();
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    const fresh = readBootstrapToken(server.home);
    assertMatch(fresh, /^[0-9a-f]{64}$/);
    assert(fresh !== oldToken);
    const printed = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert(!printed.includes(fresh), "generated token must not be printed");
    assertEquals(await sessionStatus(server, s.cookie), 401);
    assertEquals(await loginStatus(server, fresh), 200);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("a token file replaced behind the server's back also ends sessions on the next request", async () => {
  const server = await startTestServer();
  try {
    const s = await login(server);
    const path = `${server.home}/${TOKEN_PATH}`;
    const tmp = `${path}.manual`;
    Deno.writeTextFileSync(tmp, "ManualToken-123\n", { mode: 0o600 });
    Deno.renameSync(tmp, path);
    assertEquals(await sessionStatus(server, s.cookie), 401);
    assertEquals(await loginStatus(server, "ManualToken-123"), 200);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("rotate-token aborted with Ctrl-C in the pty changes nothing", async () => {
  const server = await startTestServer();
  try {
    const oldToken = readBootstrapToken(server.home);
    const s = await login(server);
    const r = await runInPty(rotateArgv(server.home), [
      { expect: "New token", send: "Partial-tok\x03" },
    ], { DENO_NO_UPDATE_CHECK: "1" });
    assertEquals(r.code, 1, r.output);
    assertMatch(r.output, /aborted/);
    assertEquals(readBootstrapToken(server.home), oldToken);
    assertEquals(await sessionStatus(server, s.cookie), 200);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("rotate-token without a running server writes the token for the next start", async () => {
  const home = Deno.makeTempDirSync({ prefix: "ab-home-" });
  Deno.chmodSync(home, 0o700);
  try {
    const out = await new Deno.Command(DENO, {
      args: rotateArgs(home, "--generate"),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { DENO_NO_UPDATE_CHECK: "1" },
    }).output();
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    assertMatch(new TextDecoder().decode(out.stdout), /No running server/);
    const token = readBootstrapToken(home);
    const server = await startTestServer({ home });
    try {
      assertEquals(readBootstrapToken(home), token, "first start keeps the rotated token");
      assertEquals(await loginStatus(server, token), 200);
    } finally {
      await server.stop();
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
