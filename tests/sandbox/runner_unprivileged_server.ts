/**
 * A server stand-in run as an unprivileged uid (by the test, through
 * setpriv): no identity switch, no namespaces — the runner's fallback. It
 * starts a bystander process of its own uid, runs a command that leaves a
 * setsid'd daemon, and reports what survived. Args: baseDir token.
 *
 * The bystander holds none of this process's pipes (stdio null): if this
 * process died before its `finally`, the bystander must not keep the test's
 * read of our output open.
 */
import { runCommand } from "../../runtime/exec/runner.ts";
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";

const [base, token] = Deno.args;
/**
 * The `sleep` processes whose argv holds `t`. Only a `sleep`'s cmdline is read (its comm comes from
 * stat first): reading another process's cmdline takes that process's mmap lock and can block.
 */
const alive = (t: string) =>
  listNumericEntries("/proc").filter((pid) => {
    const stat = readProcText(`/proc/${pid}/stat`) ?? "";
    if (!stat.includes(" (sleep) ")) return false;
    return (readProcText(`/proc/${pid}/cmdline`) ?? "").includes(t);
  });
const bystanderToken = `${token}1`;
const bystander = new Deno.Command("sleep", {
  args: [bystanderToken],
  stdin: "null",
  stdout: "null",
  stderr: "null",
}).spawn();
try {
  Deno.mkdirSync(`${base}/scratch`);
  Deno.mkdirSync(`${base}/tmp`);
  const r = await runCommand({
    argv: ["sh", "-c", `(setsid -f sleep ${token} >/dev/null 2>&1 &); echo started; id -u`],
    cwd: "",
    scratchDir: `${base}/scratch`,
    tmpDir: `${base}/tmp`,
    timeoutS: 30,
    runKey: "unpriv",
  });
  console.log(JSON.stringify({
    outcome: r.outcome,
    stdout: r.stdout.text,
    pid_namespace: r.pid_namespace,
    daemons_left: alive(`sleep\0${token}\0`).length,
    bystander_alive: alive(bystanderToken).length,
  }));
} catch (err) {
  console.log(JSON.stringify({ error: String(err) }));
} finally {
  bystander.kill("SIGKILL");
  await bystander.status;
}
