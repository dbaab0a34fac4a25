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
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";
import { childrenOf } from "../helpers/worker_procs.ts";

const NOBODY = "65534";

Deno.test("without namespaces the runner's descendant sweep ends a daemon and spares same-uid bystanders", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "ab-runner-unpriv-" });
  Deno.chmodSync(dir, 0o777);
  const token = `${300000 + Math.floor(Math.random() * 600000)}.${Date.now() % 1000}`;
  try {
    const child = new Deno.Command("setpriv", {
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
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    // The command's 30 s timeout and the runner's release budget are far inside this: a stand-in
    // still there is stuck. Say where, end it, and fail, instead of holding the suite forever.
    let stuck: string | null = null;
    const deadline = setTimeout(() => {
      stuck = describeAndKillTree(child.pid);
    }, STAND_IN_DEADLINE_MS);
    const out = await child.output();
    clearTimeout(deadline);
    assertEquals(stuck, null);
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

const STAND_IN_DEADLINE_MS = 120_000;

/** Every process below `root` (itself included), from the kernel's child lists. */
function treeOf(root: number): number[] {
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    try {
      tree.push(...childrenOf(tree[i]));
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err; // exited meanwhile
    }
  }
  return tree;
}

/** Where each process of the tree waits (state, wchan, kernel stack, threads), then SIGKILL to all. */
function describeAndKillTree(root: number): string {
  const tree = treeOf(root);
  const lines: string[] = [];
  for (const pid of tree) {
    const stat = readProcText(`/proc/${pid}/stat`) ?? "";
    lines.push(
      `${pid} ${stat.slice(0, stat.indexOf(")") + 3)} wchan=${readProcText(`/proc/${pid}/wchan`)}`,
    );
    lines.push(
      `  stack: ${(readProcText(`/proc/${pid}/stack`) ?? "").trim().replaceAll("\n", " | ")}`,
    );
    for (const tid of listNumericEntries(`/proc/${pid}/task`)) {
      const t = readProcText(`/proc/${pid}/task/${tid}/stat`) ?? "";
      lines.push(
        `  task ${tid} ${t.slice(t.indexOf("("), t.indexOf(")") + 3)} wchan=${
          readProcText(`/proc/${pid}/task/${tid}/wchan`)
        }`,
      );
    }
  }
  for (const pid of tree) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone */ }
  }
  const text = lines.join("\n");
  console.error(`runner stand-in stuck after ${STAND_IN_DEADLINE_MS} ms:\n${text}`);
  return text;
}
