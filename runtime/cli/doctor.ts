/**
 * `agent-builder doctor`: what this host supports — Landlock, seccomp, /proc, a
 * real confined Worker, and model qualification [PK-1]. Exits non-zero only
 * when a Run could not be sandboxed; an unavailable model is reported, since
 * the server serves without one and Runs then fail closed.
 *
 * [AG-5] It also inspects the home as `serve` would (agents/inspect.ts) and
 * lists every Agent that would start `unavailable`, with its fixed reason, and
 * a registry `serve` would refuse. Those are reported, not failed on: the
 * server serves the other Agents. Names are printed with hidden characters
 * escaped (display_name.ts), so a name cannot drive the operator's terminal.
 */
import { probeHost } from "../../sandbox/probe.ts";
import { UNAVAILABLE_REASONS, type UnavailableReason } from "../agents/availability.ts";
import { type HomeInspection, inspectHome } from "../agents/inspect.ts";
import { escapeName } from "../display_name.ts";
import { AppError } from "../errors.ts";
import { resolveHome } from "../home.ts";
import { DEFAULT_OLLAMA_URL } from "../limits.ts";
import { silentLogger } from "../log.ts";
import { createBroker } from "../model/broker.ts";
import { createCatalog } from "../model/catalog.ts";
import type { ModelStatus } from "../model/types.ts";
import { probeConfinedWorker, type WorkerProbeReport } from "../worker/worker_probe.ts";
import { parseArgs } from "../argv.ts";

export async function doctorCommand(argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ["home", "ollama"], switches: ["json"] });
  const catalog = createCatalog({ ollamaUrl: a.flags.ollama ?? DEFAULT_OLLAMA_URL });
  const r = probeHost();
  const home = resolveHome(a.flags.home ?? ".");
  // A real confined Worker, only when the host features are there [PK-5].
  const worker: WorkerProbeReport | null = r.sandboxable ? await probeConfinedWorker(home) : null;
  const ok = r.sandboxable && worker?.ok === true;
  const model = await qualifyModel(catalog);
  const agents = inspectAgents(home.root);
  if (a.switches.has("json")) {
    console.log(JSON.stringify({ ...r, worker, model, agents, sandboxable: ok }, null, 2));
  } else {
    const mark = (b: boolean) => (b ? "ok " : "NO ");
    console.log(`host        ${r.os}/${r.arch}, kernel ${r.kernel}`);
    console.log(
      `${mark(r.landlockAbi !== null && !r.landlockReason)} landlock  ${
        r.landlockAbi === null ? "unavailable" : `ABI ${r.landlockAbi}`
      }${r.landlockReason ? ` — ${r.landlockReason}` : ""}`,
    );
    console.log(`${mark(r.seccomp)} seccomp   ${r.seccomp ? "filter mode" : r.seccompReason}`);
    console.log(`${mark(r.proc)} /proc     ${r.proc ? "mounted" : "missing"}`);
    console.log(`${mark(worker?.ok === true)} worker    ${describeWorker(worker)}`);
    console.log(`${mark(model.available)} model     ${describeModel(catalog.defaultId, model)}`);
    for (const line of describeAgents(agents)) console.log(line);
    const problems = [...r.problems];
    if (worker && !worker.ok) problems.push(`confined Worker refused (${worker.code})`);
    console.log(ok ? "Runs can be sandboxed." : `Runs would be REFUSED: ${problems.join("; ")}`);
  }
  return ok ? 0 : 1;
}

type AgentsReport =
  | { home: "unsafe"; code: string }
  | {
    home: "ok";
    registry: HomeInspection["registry"];
    agents: number;
    unavailable: { id: string; name: string; reason: UnavailableReason }[];
  };

/** What `serve` would make of this home's Agents [AG-5]; never writes. */
function inspectAgents(root: string): AgentsReport {
  let h: HomeInspection;
  try {
    h = inspectHome(root);
  } catch (err) {
    if (err instanceof AppError) return { home: "unsafe", code: err.code };
    throw err;
  }
  return {
    home: "ok",
    registry: h.registry,
    agents: h.agents.length,
    unavailable: h.agents.filter((x) => x.reason !== null).map((x) => ({
      id: x.id,
      name: x.name,
      reason: x.reason as UnavailableReason,
    })),
  };
}

/** Quoted, with hidden characters (controls, bidi overrides …) made visible [OP-1]. */
function quoted(name: string): string {
  return `"${escapeName(name)}"`;
}

function describeAgents(r: AgentsReport): string[] {
  if (r.home === "unsafe") return [`NO  agents    the home fails its safety check (${r.code})`];
  if (r.registry === "missing") return ["ok  agents    no registry yet (a new home)"];
  if (r.registry !== "ok") {
    return [`NO  agents    the registry would be refused by serve (${r.registry})`];
  }
  if (r.unavailable.length === 0) return [`ok  agents    ${r.agents} Agents, all would serve`];
  return [
    `NO  agents    ${r.unavailable.length} of ${r.agents} Agents unavailable ` +
    `(the others serve; delete or repair these):`,
    ...r.unavailable.map((u) =>
      `              ${u.id} ${quoted(u.name)}: ${u.reason} — ${UNAVAILABLE_REASONS[u.reason]}`
    ),
  ];
}

/** Qualifies the default catalog model once, exactly as `serve` would [MB-2]. */
async function qualifyModel(catalog: ReturnType<typeof createCatalog>): Promise<ModelStatus> {
  const broker = createBroker({ catalog, log: silentLogger, qualifyNow: false });
  try {
    await broker.requalify();
    return broker.status();
  } finally {
    await broker.close();
  }
}

function describeModel(id: string, m: ModelStatus): string {
  if (!m.available) {
    return `${id} unavailable (${m.reason}) — start Ollama or pass --ollama URL; Runs fail closed`;
  }
  const caps = Object.entries(m.profile.capabilities).filter(([, v]) => v).map(([k]) => k);
  return `${id}: window ${m.profile.window} (native ${m.profile.nativeWindow}), input budget ` +
    `${m.profile.budget}, capabilities ${caps.join(", ")}`;
}

function describeWorker(w: WorkerProbeReport | null): string {
  if (w === null) return "not tried (host lacks a required feature)";
  if (!w.ok) return `refused: ${w.code} — ${w.detail}`;
  return `confined and attested in ${w.attestedMs} ms (${w.threads} threads verified, ` +
    `Landlock ABI ${w.landlockAbi}, seccomp TSYNC, no capabilities)`;
}
