/**
 * The instance lock [OP-2] against a real second process: a lock held only
 * for a moment (as a forked child briefly shares it before exec) is taken
 * once it is free; a lock held for longer is `instance_locked`.
 */
import { acquireInstanceLock } from "../../runtime/instance.ts";
import { AppError } from "../../runtime/errors.ts";
import { ensurePrivateDir } from "../../runtime/path_safety.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";

/** Starts `flock` holding the home's lock file for `seconds`; resolves once it holds it. */
async function holdLock(home: string, seconds: number): Promise<Deno.ChildProcess> {
  ensurePrivateDir(home, ".runtime/control-plane");
  const lockFile = `${home}/.runtime/control-plane/lock`;
  Deno.writeFileSync(lockFile, new Uint8Array(), { mode: 0o600 });
  // -o: only flock itself holds the lock, so killing it frees the lock.
  const child = new Deno.Command("flock", {
    args: ["-x", "-o", lockFile, "sh", "-c", `echo held; sleep ${seconds}`],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  assertEquals(new TextDecoder().decode(value), "held\n");
  reader.releaseLock();
  return child;
}

Deno.test("a lock held for a moment is taken once free; one held longer is instance_locked", async () => {
  const home = makeTempHome();
  try {
    const brief = await holdLock(home, 0.15);
    const started = Date.now();
    const lock = acquireInstanceLock(home);
    assert(Date.now() - started >= 50, "it waited for the holder");
    lock.release();
    await brief.status;

    const long = await holdLock(home, 5);
    let got: unknown = null;
    const t0 = Date.now();
    try {
      acquireInstanceLock(home).release();
    } catch (err) {
      got = err;
    }
    assert(got instanceof AppError && got.code === "instance_locked", String(got));
    assert(Date.now() - t0 < 2000, "a held lock is reported without waiting for its holder");
    long.kill("SIGKILL");
    await long.status;
    acquireInstanceLock(home).release();
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});
