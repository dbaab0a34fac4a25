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
      let health: Response | null = null;
      for (let i = 0; i < 200 && health === null; i++) {
        try {
          health = await fetch(`http://127.0.0.1:${port}/health`);
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      assert(health !== null, "bundle did not start");
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
      await child.stdout.cancel();
      await child.stderr.cancel();
    }
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
