/**
 * `serve --runner-user` [EX-1, SB-7]: the account a root server's Workers
 * and commands run as; an account that is unknown or privileged is refused
 * before the server opens anything.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { configureSandboxUser } from "../../sandbox/identity.ts";
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { runCommand } from "../../runtime/exec/runner.ts";
import { parseStatus } from "../../sandbox/attestation.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { anyFrame, recordingLogger } from "./helpers.ts";

Deno.test("serve refuses a --runner-user that is unknown or root, with exit 2", async () => {
  for (const user of ["no-such-account-xyz", "root", "0"]) {
    const home = Deno.makeTempDirSync({ prefix: "ab-ru-" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--quiet",
          "--config",
          new URL("../../deno.json", import.meta.url).pathname,
          new URL("../../main.ts", import.meta.url).pathname,
          "serve",
          "--home",
          home,
          "--port",
          "0",
          "--runner-user",
          user,
        ],
        stdout: "null",
        stderr: "piped",
      }).output();
      assertEquals(out.code, 2, user);
      assert(new TextDecoder().decode(out.stderr).includes("--runner-user"), user);
      // Nothing was created in the home.
      assertEquals([...Deno.readDirSync(home)].length, 0, user);
    } finally {
      Deno.removeSync(home, { recursive: true });
    }
  }
});

Deno.test("with --runner-user daemon, Workers and commands run as that account", async () => {
  const base = Deno.makeTempDirSync({ prefix: "ab-ru-" });
  try {
    assertEquals(configureSandboxUser("daemon"), true);
    const runRoot = `${base}/run`;
    Deno.mkdirSync(runRoot);
    const w = await spawnConfinedWorker({
      runRoot,
      deadlineMs: 30_000,
      log: recordingLogger(),
      parseFrame: anyFrame,
    });
    const uid = parseStatus(readProcText(`/proc/${w.pid}/status`) ?? "").get("Uid");
    await w.kill("killed");
    assertEquals(uid, "1\t1\t1\t1");
    Deno.mkdirSync(`${base}/scratch`);
    Deno.mkdirSync(`${base}/tmp`);
    const r = await runCommand({
      argv: ["id", "-u"],
      cwd: "",
      scratchDir: `${base}/scratch`,
      tmpDir: `${base}/tmp`,
      timeoutS: 30,
      runKey: "ru",
    });
    assertEquals([r.outcome, r.stdout.text], ["exited", "1\n"]);
  } finally {
    configureSandboxUser("nobody");
    Deno.removeSync(base, { recursive: true });
  }
});
