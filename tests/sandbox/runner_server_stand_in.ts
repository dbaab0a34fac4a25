/**
 * A server stand-in for the runner lifecycle test: runs one long command
 * through runCommand() and waits; the test kills this process with SIGKILL
 * mid-command. Args: scratchDir tmpDir sleepToken.
 */
import { runCommand } from "../../runtime/exec/runner.ts";

const [scratchDir, tmpDir, token] = Deno.args;
await runCommand({
  argv: ["sh", "-c", `(setsid -f sleep ${token} >/dev/null 2>&1 &); sleep ${token}`],
  cwd: "",
  scratchDir,
  tmpDir,
  timeoutS: 120,
  runKey: "stand-in",
});
