/**
 * Test support for external ACP runners [LC-6]: the argv of the scripted ACP
 * agent (tests/helpers/acp_agent.ts, official SDK) and a Run harness whose
 * server registers it as `--acp-runner scripted=…`, forwarding only
 * `ACP_TEST_OUT` (where the agent records what it saw).
 */
import { DENO, REPO } from "./server.ts";
import { type RunHarness, startRunHarness } from "./runs.ts";

/** The scripted agent's command, split on spaces by the server (no shell). */
export const ACP_AGENT_ARGV = [
  DENO,
  "run",
  "--quiet",
  "--no-prompt",
  "--config",
  `${REPO}/deno.json`,
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-net=127.0.0.1",
  `${REPO}/tests/helpers/acp_agent.ts`,
];

export interface AcpHarness extends RunHarness {
  /** The directory the agent records its environment and gateway grants in. */
  out: string;
}

export async function startAcpHarness(extraArgs: string[] = []): Promise<AcpHarness> {
  const out = await Deno.makeTempDir({ prefix: "acp-out-" });
  const h = await startRunHarness({
    args: [
      "--acp-runner",
      `scripted=${ACP_AGENT_ARGV.join(" ")}`,
      "--acp-runner-env",
      "scripted=ACP_TEST_OUT",
      ...extraArgs,
    ],
    env: { ACP_TEST_OUT: out },
  });
  const close = h.close;
  return {
    ...h,
    out,
    async close() {
      await close();
      await Deno.remove(out, { recursive: true });
    },
  };
}

/** Files the agent wrote into `out` whose names start with `prefix`, parsed. */
export function recorded(out: string, prefix: string): unknown[] {
  const files = [...Deno.readDirSync(out)].filter((e) => e.name.startsWith(prefix)).map((e) =>
    e.name
  ).sort();
  return files.map((f) => JSON.parse(Deno.readTextFileSync(`${out}/${f}`)));
}
