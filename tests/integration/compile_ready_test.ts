/**
 * Compile-readiness [PK-3]: the server bundled into ONE file must serve /health
 * and the UI from an empty directory, proving nothing reads the source tree at
 * run time (UI bundle, HTML and SQL migrations are embedded through imports).
 */
import { DENO, freePort, REPO } from "../helpers/server.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

Deno.test("the single-file bundle serves /health and / from an empty directory", async () => {
  const work = await Deno.makeTempDir({ prefix: "ab-bundle-" });
  try {
    const bundle = `${work}/agent-builder.js`;
    const b = await new Deno.Command(DENO, {
      // typescript (the runtime-compile checker) tries an optional
      // require("source-map-support") inside a try; nothing ships that package.
      args: [
        "bundle",
        "--quiet",
        "--config",
        `${REPO}/deno.json`,
        "--external",
        "source-map-support",
        "-o",
        bundle,
        `${REPO}/main.ts`,
      ],
      cwd: REPO,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(b.success, new TextDecoder().decode(b.stderr));
    const home = `${work}/empty-home`;
    Deno.mkdirSync(home, { mode: 0o700 });
    const port = freePort();
    // Run from the empty home with the source tree not readable to the bundle.
    const child = new Deno.Command(DENO, {
      args: [
        "run",
        "--quiet",
        "--no-config",
        // The account database names the sandboxes' unprivileged user [SB-7].
        `--allow-read=${work},/etc/passwd,/etc/group`,
        `--allow-write=${work}`,
        // Loopback TCP and the gateway's private Unix socket (under TMPDIR) [GW-1].
        "--allow-net",
        "--allow-ffi",
        "--allow-env",
        "--allow-sys",
        bundle,
        "serve",
        "--port",
        String(port),
      ],
      cwd: home,
      env: { TMPDIR: work },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      // Wait for the state "listening" (the bundle parses ~16 MiB of JavaScript first, which
      // takes seconds on a loaded machine), or for the process to end.
      const started = await waitForLine(child.stdout, "agent-builder listening on", 90_000);
      assert(started, "bundle did not start");
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      assertEquals(health.status, 200);
      assertEquals((await health.json()).status, "ok");
      const page = await fetch(`http://127.0.0.1:${port}/`);
      assertEquals(page.status, 200);
      assert((await page.text()).includes('id="app"'));
      const js = await fetch(`http://127.0.0.1:${port}/assets/app.js`);
      assertEquals(js.status, 200);
      await js.body?.cancel();
      assert(Deno.statSync(`${home}/data/agent-registry.sqlite`).isFile);
    } finally {
      try {
        child.kill("SIGTERM");
      } catch { /* already exited; status below tells */ }
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await child.stderr.cancel();
    }
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

/** Reads `stream` until a line containing `text` (true) or its end or `ms` (false); releases the reader. */
async function waitForLine(
  stream: ReadableStream<Uint8Array>,
  text: string,
  ms: number,
): Promise<boolean> {
  const reader = stream.getReader();
  const dec = new TextDecoder();
  let seen = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((r) => timer = setTimeout(() => r(null), ms));
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), timeout]);
      if (r === null || r.done) return false;
      seen += dec.decode(r.value, { stream: true });
      if (seen.includes(text)) return true;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}
