/**
 * Where a root server keeps the module cache of its sandboxes [PF-4]: in RAM
 * (a tmpfs at /dev/shm) when there is one, so the cache databases every
 * Worker start rewrites never reach the disk; on disk otherwise.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { DENO, REPO, RUN_FLAGS } from "../helpers/server.ts";
import {
  isTmpfsMount,
  SANDBOX_DENO_DIR,
  SANDBOX_DENO_DIR_ON_DISK,
  sandboxDenoDir,
} from "../../runtime/worker/supervisor.ts";

const MOUNTS = [
  "/dev/vda / ext4 rw,relatime 0 0",
  "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
  "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0",
  "tmpfs /run tmpfs rw,nosuid,nodev,mode=755 0 0",
].join("\n");

Deno.test("a tmpfs mounted exactly at /dev/shm is recognised, a tmpfs elsewhere is not", () => {
  assert(isTmpfsMount("/dev/shm", MOUNTS));
  assert(!isTmpfsMount("/dev", MOUNTS));
  assert(!isTmpfsMount("/", MOUNTS));
  assert(!isTmpfsMount("/dev/shm", ""));
  assert(!isTmpfsMount("/dev/shm", "/dev/vda / ext4 rw 0 0"));
});

Deno.test("the last mount at a mount point decides (a disk mounted over the tmpfs is a disk)", () => {
  assert(!isTmpfsMount("/dev/shm", `${MOUNTS}\n/dev/vdb /dev/shm ext4 rw 0 0`));
  assert(isTmpfsMount("/dev/shm", `/dev/vdb /dev/shm ext4 rw 0 0\n${MOUNTS}`));
});

Deno.test("a root server on a machine with a tmpfs /dev/shm gives its sandboxes a cache in RAM", async () => {
  // Under the launcher's permission flags (no --allow-all), as `serve` runs.
  const out = await new Deno.Command(DENO, {
    args: [...RUN_FLAGS, `${REPO}/tests/helpers/print_sandbox_deno_dir.ts`],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert(out.success);
  const dir = JSON.parse(new TextDecoder().decode(out.stdout)) as string | null;
  const tmpfs = isTmpfsMount("/dev/shm", Deno.readTextFileSync("/proc/self/mounts"));
  if (Deno.uid() !== 0) {
    // Not root: the server's own cache, wherever it is.
    assert(dir !== SANDBOX_DENO_DIR && dir !== SANDBOX_DENO_DIR_ON_DISK);
    return;
  }
  assertEquals(dir, tmpfs ? SANDBOX_DENO_DIR : SANDBOX_DENO_DIR_ON_DISK);
  const st = Deno.lstatSync(dir!);
  assert(st.isDirectory && st.uid === 0 && ((st.mode ?? 0o777) & 0o022) === 0);
  assertEquals(sandboxDenoDir(), dir);
});
