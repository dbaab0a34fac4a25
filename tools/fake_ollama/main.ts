/**
 * `deno task fake-ollama [--scenario NAME] [--port N] [--delay-ms N]
 * [--context-length N] [--capabilities completion,tools] [--fleet]` (`--fleet`:
 * the realistic multi-model fleet with pullable models) — runs the scripted
 * Ollama server on 127.0.0.1 until interrupted. NAME is one of the keys of
 * SCENARIOS (default `markdown`, a friendly streamed Markdown answer); every
 * /api/chat request gets that scenario, except with `auto`, which picks one
 * per request from trigger words in the latest user message (README). Point the product at it with
 * `agent-builder serve --ollama http://127.0.0.1:N`.
 */
import { parseArgs, UsageError } from "../../runtime/argv.ts";
import { DEFAULT_MODEL } from "../../runtime/limits.ts";
import { FAKE_FLEET, FAKE_PULLABLE, type FakeModel } from "./frames.ts";
import { SCENARIOS } from "./scenarios.ts";
import { startFakeOllama } from "./server.ts";

function intFlag(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    throw new UsageError(`--${name} must be a non-negative integer`);
  }
  return n;
}

async function main(argv: string[]): Promise<number> {
  const a = parseArgs(argv, {
    flags: ["scenario", "port", "delay-ms", "context-length", "capabilities", "model"],
    switches: ["fleet"],
  });
  const name = a.flags.scenario ?? "markdown";
  const build = SCENARIOS[name];
  if (!build) {
    throw new UsageError(`unknown scenario; one of: ${Object.keys(SCENARIOS).join(", ")}`);
  }
  const model = a.flags.model ?? DEFAULT_MODEL;
  const server = await startFakeOllama({
    port: intFlag(a.flags.port, "port", 11434),
    maxRecorded: 64, // a long demo session keeps only recent requests in memory
    defaultScript: build(intFlag(a.flags["delay-ms"], "delay-ms", 0)),
    // --fleet: several families, windows and capabilities, and pullable models [MB-10, MB-13].
    pullable: a.switches.has("fleet") ? structuredClone(FAKE_PULLABLE) : {},
    models: a.switches.has("fleet") ? structuredClone(FAKE_FLEET) as Record<string, FakeModel> : {
      [model]: {
        arch: "qwen35",
        contextLength: intFlag(a.flags["context-length"], "context-length", 262144),
        capabilities: (a.flags.capabilities ?? "completion,tools,thinking").split(","),
      },
    },
  });
  console.log(`fake ollama (${name}) listening on ${server.url}`);
  const stop = () => void server.close();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`fake-ollama: ${err.message}`);
      Deno.exit(2);
    }
    throw err;
  }
}
