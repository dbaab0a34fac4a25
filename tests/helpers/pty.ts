/**
 * Drives a command through a real pseudo-terminal (python3's `pty` module):
 * waits for each expected prompt, types the answer, and collects everything
 * the terminal showed. Used to prove that hidden-TTY input is not echoed.
 * Answers travel to the driver over its stdin, never argv or env.
 */
const DRIVER = `
import json, os, pty, select, sys, time
spec = json.loads(sys.stdin.read())
pid, fd = pty.fork()
if pid == 0:
    os.execve(spec["argv"][0], spec["argv"], spec["env"])
out = b""
deadline = time.time() + spec["timeout"]
def pump(wait):
    global out
    r, _, _ = select.select([fd], [], [], wait)
    if not r:
        return True
    try:
        data = os.read(fd, 4096)
    except OSError:
        return False
    if not data:
        return False
    out += data
    return True
alive = True
for step in spec["steps"]:
    start = len(out)
    while alive and step["expect"].encode() not in out[start:] and time.time() < deadline:
        alive = pump(0.1)
    if step["expect"].encode() not in out[start:]:
        break
    os.write(fd, step["send"].encode())
while alive and time.time() < deadline:
    alive = pump(0.2)
if alive:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
print(json.dumps({"output": out.decode("utf-8", "replace"), "code": os.waitstatus_to_exitcode(status)}))
`;

export interface PtyStep {
  /** Text to wait for (after the previous step's output). */
  expect: string;
  /** Keystrokes to type, e.g. "secret\\r". */
  send: string;
}

export interface PtyResult {
  output: string;
  code: number;
}

export async function runInPty(
  argv: string[],
  steps: PtyStep[],
  env: Record<string, string> = {},
  timeoutSeconds = 30,
): Promise<PtyResult> {
  const child = new Deno.Command("python3", {
    args: ["-c", DRIVER],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const fullEnv = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", TERM: "xterm", ...env };
  const w = child.stdin.getWriter();
  await w.write(
    new TextEncoder().encode(
      JSON.stringify({ argv, steps, env: fullEnv, timeout: timeoutSeconds }),
    ),
  );
  await w.close();
  const out = await child.output();
  if (!out.success) throw new Error(`pty driver failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout)) as PtyResult;
}
