/**
 * The operator's registered ACP runners [LC-6]: `serve --acp-runner NAME=COMMAND`
 * (repeatable) and `--acp-runner-env NAME=VAR` (repeatable).
 *
 * What this file enforces: a runner name is `[a-z][a-z0-9-]{0,31}` and given
 * once; COMMAND is split on spaces into argv — no shell, no quoting, no
 * expansion — at most ACP_ARGV_MAX words; the runner's environment is
 * explicit: PATH and HOME of the server, plus only the variables the
 * operator named for that runner (their values read once, at start). No
 * product secret is ever added here: the bootstrap token, session cookies and
 * keys live in files and memory of the Control Plane, never in its
 * environment, and the child starts with a cleared environment.
 */
import { ACP_ARGV_MAX, ACP_ENV_VARS_MAX, ACP_RUNNERS_MAX } from "../limits.ts";

export const RUNNER_NAME = /^[a-z][a-z0-9-]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** One registered runner. */
export interface RunnerSpec {
  name: string;
  argv: string[];
  /** Exactly the environment the runner process gets. */
  env: Record<string, string>;
  /** Names of the operator-forwarded variables (shown, never their values). */
  forwarded: string[];
}

/** A flag value the operator must fix (the CLI turns it into exit 2). */
export class RunnerFlagError extends Error {}

/**
 * Parses the flags; `getEnv` reads the server's environment (injected for tests).
 * @example parseRunnerFlags(["echo=/bin/echo hi"], [], () => undefined)[0].argv // ["/bin/echo","hi"]
 */
export function parseRunnerFlags(
  runners: readonly string[],
  envFlags: readonly string[],
  getEnv: (name: string) => string | undefined,
): RunnerSpec[] {
  if (runners.length > ACP_RUNNERS_MAX) {
    throw new RunnerFlagError(`at most ${ACP_RUNNERS_MAX} --acp-runner commands`);
  }
  const out: RunnerSpec[] = [];
  for (const v of runners) {
    const i = v.indexOf("=");
    const name = i > 0 ? v.slice(0, i) : "";
    if (!RUNNER_NAME.test(name)) {
      throw new RunnerFlagError("--acp-runner needs NAME=COMMAND with NAME [a-z][a-z0-9-]{0,31}");
    }
    if (out.some((r) => r.name === name)) throw new RunnerFlagError(`--acp-runner ${name} twice`);
    const argv = v.slice(i + 1).split(" ").filter((w) => w !== "");
    if (argv.length === 0) throw new RunnerFlagError(`--acp-runner ${name}: empty command`);
    if (argv.length > ACP_ARGV_MAX || argv.some((w) => w.includes("\0"))) {
      throw new RunnerFlagError(`--acp-runner ${name}: at most ${ACP_ARGV_MAX} words, no NUL`);
    }
    const env: Record<string, string> = Object.create(null);
    // The baseline a command-line program needs to be found and to find its own config.
    for (const k of ["PATH", "HOME"]) {
      const val = getEnv(k);
      if (val !== undefined) env[k] = val;
    }
    out.push({ name, argv, env, forwarded: [] });
  }
  for (const v of envFlags) {
    const i = v.indexOf("=");
    const r = out.find((x) => i > 0 && x.name === v.slice(0, i));
    const varName = v.slice(i + 1);
    if (!r || !ENV_NAME.test(varName)) {
      throw new RunnerFlagError(
        "--acp-runner-env needs NAME=VAR for a NAME given with --acp-runner",
      );
    }
    if (r.forwarded.length >= ACP_ENV_VARS_MAX) {
      throw new RunnerFlagError(`--acp-runner-env: at most ${ACP_ENV_VARS_MAX} per runner`);
    }
    if (!r.forwarded.includes(varName)) r.forwarded.push(varName);
    const val = getEnv(varName);
    // A variable the server does not have is simply absent for the runner too.
    if (val !== undefined) r.env[varName] = val;
  }
  return out;
}

/** The public view of a runner: never its environment's values. */
export function runnerView(r: RunnerSpec): {
  name: string;
  argv: string[];
  env: string[];
} {
  return { name: r.name, argv: [...r.argv], env: Object.keys(r.env).sort() };
}
