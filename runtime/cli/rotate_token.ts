/**
 * `agent-builder rotate-token [--home DIR] [--generate]` [GW-2]: replaces the
 * bootstrap token and logs out every browser of a running server.
 *
 * - The new value is read twice from a hidden TTY (raw mode, no echo). It is
 *   never read from argv or the environment, and the command refuses when
 *   stdin is not a TTY unless `--generate` asks for a fresh random 256-bit
 *   token (which is written to the file and not printed).
 * - Accepted: 10..128 characters of `[A-Za-z0-9._~+-]`.
 * - The file is replaced by private temp + fsync + atomic rename.
 * - A running server is told through SIGHUP, sent only to the pid named by
 *   the validated pid record (pid + start time). The server also re-stats the
 *   token file on every authenticated request, so sessions end even if the
 *   signal cannot be delivered.
 *
 * SECURITY: the token is never printed, logged or placed in an error.
 */
import { resolveHome } from "../home.ts";
import { readLivePidRecord } from "../instance.ts";
import { TOKEN_MAX_CHARS, TOKEN_MIN_CHARS } from "../limits.ts";
import { generateToken, isValidTokenFormat, writeToken } from "../secrets/bootstrap_token.ts";
import { ensurePrivateDir } from "../path_safety.ts";
import { parseArgs, type ParsedArgs, UsageError } from "../argv.ts";

const CTRL_C = 0x03;
const CTRL_D = 0x04;
const BACKSPACE = 0x7f;
const CTRL_H = 0x08;

class InputAborted extends Error {}

/**
 * Reads one line from the TTY without echo. Input beyond `TOKEN_MAX_CHARS + 1`
 * characters is not kept (the line is then invalid anyway).
 */
async function readHiddenLine(prompt: string): Promise<string> {
  const enc = new TextEncoder();
  // Raw (no echo) before the prompt appears, so nothing typed is ever echoed.
  Deno.stdin.setRaw(true);
  const chars: number[] = [];
  const buf = new Uint8Array(64);
  try {
    await Deno.stderr.write(enc.encode(prompt));
    for (;;) {
      const n = await Deno.stdin.read(buf);
      if (n === null) throw new InputAborted();
      for (const b of buf.subarray(0, n)) {
        if (b === 0x0d || b === 0x0a) return String.fromCharCode(...chars);
        if (b === CTRL_C || (b === CTRL_D && chars.length === 0)) throw new InputAborted();
        if (b === BACKSPACE || b === CTRL_H) chars.pop();
        else if (chars.length <= TOKEN_MAX_CHARS) chars.push(b);
      }
    }
  } finally {
    Deno.stdin.setRaw(false);
    await Deno.stderr.write(enc.encode("\n"));
  }
}

/**
 * Parses `[--home DIR] [--generate]`. Anything else may be a token typed on the
 * command line by mistake, so the refusal names no argument (a usage error
 * would repeat it) and nothing is changed.
 */
function parseRotateArgs(argv: string[]): ParsedArgs {
  try {
    return parseArgs(argv, { flags: ["home"], switches: ["generate"] });
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    throw new UsageError(
      "takes only --home DIR and --generate; the token is never read from the command line " +
        "(it is typed at a hidden prompt)",
    );
  }
}

export async function rotateTokenCommand(argv: string[]): Promise<number> {
  const a = parseRotateArgs(argv);
  const home = resolveHome(a.flags.home ?? Deno.cwd());
  let token: string;
  if (a.switches.has("generate")) {
    token = generateToken();
  } else {
    if (!Deno.stdin.isTerminal()) {
      console.error(
        "agent-builder rotate-token: stdin is not a terminal; the token is only read from a " +
          "hidden TTY prompt. Use --generate for a random token.",
      );
      return 2;
    }
    let first: string;
    let second: string;
    try {
      first = await readHiddenLine(
        `New token (${TOKEN_MIN_CHARS}..${TOKEN_MAX_CHARS} chars of A-Z a-z 0-9 . _ ~ + -): `,
      );
      second = await readHiddenLine("Repeat the new token: ");
    } catch (err) {
      if (!(err instanceof InputAborted)) throw err;
      console.error("agent-builder rotate-token: aborted; the token was not changed.");
      return 1;
    }
    if (first !== second) {
      console.error(
        "agent-builder rotate-token: the two entries differ; the token was not changed.",
      );
      return 1;
    }
    if (!isValidTokenFormat(first)) {
      console.error(
        `agent-builder rotate-token: a token must be ${TOKEN_MIN_CHARS}..${TOKEN_MAX_CHARS} ` +
          "characters of A-Z a-z 0-9 . _ ~ + -; the token was not changed.",
      );
      return 1;
    }
    token = first;
  }
  writeToken(home.root, token);
  console.log(
    `New bootstrap token written to ${home.root}/.runtime/secrets/web-bootstrap-token (mode 0600).`,
  );
  // A home that never served has no control-plane dir yet (nor a pid record).
  ensurePrivateDir(home.root, ".runtime/control-plane");
  const rec = readLivePidRecord(home.root);
  if (rec === null) {
    console.log("No running server for this home; the new token applies at its next start.");
    return 0;
  }
  // SECURITY: only the pid whose start time matches the record is signalled.
  Deno.kill(rec.pid, "SIGHUP");
  console.log(
    `Signalled the running server (pid ${rec.pid}) to reload: every browser session is logged out.`,
  );
  return 0;
}
