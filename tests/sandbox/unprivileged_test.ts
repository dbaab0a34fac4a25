/**
 * An unprivileged operator gets the same confinement [SB-7, SB-1]: with no
 * capabilities to drop (and a full bounding set it cannot change), the Worker
 * still attests with empty eff/prm sets, no_new_privs and seccomp, and its
 * RLIMIT_NPROC leaves room above the uid's existing tasks.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { WORKER_RLIMIT_NPROC } from "../../runtime/limits.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";

const NOBODY = "65534";

Deno.test("a Control Plane running as an unprivileged uid gets verified confined Workers", async () => {
  // A scratch dir the unprivileged uid can use (its Deno cache and the Run root).
  const dir = Deno.makeTempDirSync({ prefix: "ab-unpriv-" });
  Deno.chmodSync(dir, 0o777);
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
        new URL("./unprivileged_supervisor.ts", import.meta.url).pathname,
        dir,
      ],
      clearEnv: true,
      env: { DENO_DIR: `${dir}/deno`, HOME: dir, DENO_NO_UPDATE_CHECK: "1" },
      stderr: "inherit",
    }).output();
    assertEquals(out.code, 0);
    const r = JSON.parse(new TextDecoder().decode(out.stdout));
    assertEquals(r.error, undefined);
    assertEquals([r.uid, r.capEff, r.capPrm, r.noNewPrivs, r.seccomp], [
      NOBODY,
      "0000000000000000",
      "0000000000000000",
      "1",
      "2",
    ]);
    assert(r.nproc >= WORKER_RLIMIT_NPROC, `nproc ${r.nproc}`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
