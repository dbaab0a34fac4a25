/**
 * The runner under an unprivileged server [EX-2]: no uid switch and no PID
 * namespace are possible, so release rests on the runner's own sweep —
 * SIGKILL to every process whose parent chain reaches the runner (it is the
 * child subreaper, so orphans are its children), then reaping until ECHILD.
 * A setsid'd daemon of the command does not survive, and a process of the
 * SAME uid outside the runner (the server's own child) is not touched.
 */
import { assertEquals } from "../helpers/assert.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";

const NOBODY = "65534";

Deno.test("without namespaces the runner's descendant sweep ends a daemon and spares same-uid bystanders", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "ab-runner-unpriv-" });
  Deno.chmodSync(dir, 0o777);
  const token = `${300000 + Math.floor(Math.random() * 600000)}.${Date.now() % 1000}`;
  try {
    const out = await new Deno.Command("setpriv", {
      args: [
        `--reuid=${NOBODY}`,
        `--regid=${NOBODY}`,
        "--clear-groups",
        "--inh-caps=-all",
        Deno.execPath(),
        ...denoRunFlags(),
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-env",
        new URL("./runner_unprivileged_server.ts", import.meta.url).pathname,
        dir,
        token,
      ],
      clearEnv: true,
      env: { DENO_DIR: `${dir}/deno`, HOME: dir, DENO_NO_UPDATE_CHECK: "1", PATH: "/usr/bin:/bin" },
      stderr: "inherit",
    }).output();
    assertEquals(out.code, 0);
    assertEquals(JSON.parse(new TextDecoder().decode(out.stdout)), {
      outcome: "exited",
      stdout: `started\n${NOBODY}\n`,
      pid_namespace: false,
      daemons_left: 0,
      bystander_alive: 1,
    });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
