/**
 * [OP-2] A killed server cannot remove its private socket directory; the next server sweeps the
 * ones whose socket refuses connections (and socketless ones over STALE_SOCKET_DIR_MIN_AGE_MS),
 * and keeps a live server's, a starting server's, its own and anything not named like them.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { sweepStaleSocketDirs } from "../../runtime/http/server.ts";
import { STALE_SOCKET_DIR_MIN_AGE_MS } from "../../runtime/limits.ts";
import { startTestServer } from "../helpers/server.ts";

const exists = (p: string) => Deno.lstat(p).then(() => true, () => false);

/** A socket file nobody listens on any more: what a killed server leaves. */
function deadSocket(path: string): void {
  const l = Deno.listen({ transport: "unix", path });
  l.close();
  // Closing a listener does not unlink its file in Deno; make sure it is there.
  try {
    Deno.lstatSync(path);
  } catch {
    Deno.writeFileSync(path, new Uint8Array()); // a plain file refuses connections too
  }
}

Deno.test("the sweep removes dead servers' socket dirs and keeps live, starting and foreign ones", async () => {
  const parent = Deno.makeTempDirSync({ prefix: "ab-sweep-" });
  const mk = (name: string) => {
    Deno.mkdirSync(`${parent}/${name}`, { mode: 0o700 });
    return `${parent}/${name}`;
  };
  const dead = mk("agent-builder-http-dead");
  deadSocket(`${dead}/http.sock`);
  const liveDir = mk("agent-builder-http-alive");
  const listener = Deno.listen({ transport: "unix", path: `${liveDir}/http.sock` });
  const starting = mk("agent-builder-http-starting");
  const old = mk("agent-builder-http-old");
  const longAgo = new Date(Date.now() - STALE_SOCKET_DIR_MIN_AGE_MS - 60_000);
  Deno.utimeSync(old, longAgo, longAgo);
  const own = mk("agent-builder-http-own");
  deadSocket(`${own}/http.sock`);
  const foreign = mk("other-http-dead");
  deadSocket(`${foreign}/http.sock`);
  try {
    assertEquals(await sweepStaleSocketDirs(parent, own), 2);
    assertEquals(
      await Promise.all([dead, liveDir, starting, old, own, foreign].map(exists)),
      [false, true, true, false, true, true],
    );
  } finally {
    listener.close();
    Deno.removeSync(parent, { recursive: true });
  }
});

Deno.test("a server's start sweeps the socket dir a killed server left in its temp dir", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "ab-sweep-tmp-" });
  const stale = `${tmp}/agent-builder-http-killed`;
  Deno.mkdirSync(stale, { mode: 0o700 });
  deadSocket(`${stale}/http.sock`);
  const server = await startTestServer({ env: { TMPDIR: tmp } });
  try {
    // The sweep runs in the background after the server listens: wait for the state, bounded.
    const end = Date.now() + 30_000;
    while (await exists(stale)) {
      assert(Date.now() < end, "the killed server's socket dir is still there");
      await new Promise((r) => setTimeout(r, 20));
    }
    const left = [...Deno.readDirSync(tmp)].map((e) => e.name)
      .filter((n) => n.startsWith("agent-builder-http-"));
    assertEquals(left.length, 1, "only the running server's own socket dir");
  } finally {
    await server.stop();
    Deno.removeSync(tmp, { recursive: true });
  }
});
