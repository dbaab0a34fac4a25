/**
 * Documents per Agent [LC-4]: the port a Run's tool calls use for
 * `document/extract_text`, and the setting's two fences.
 *
 *   const port = documentsPort({ enabled: (agentId) => …, extract: extractText });
 *   await port.extract({ agentId, workspaceDir, args, runKey, signal });
 *
 * What this file enforces — the enable/disable decision:
 *  - admission: a Run admitted while the Agent's documents are off never has
 *    the tool in its ToolSet (run_inputs.ts denies it); turning them on later
 *    does not add it to that Run (its ToolSet is pinned at admission);
 *  - each call: the setting is read again before the runner starts, so a call
 *    made after the operator turned documents off is refused
 *    `documents_disabled` and runs nothing; an extraction already running
 *    when they are turned off finishes (it only reads, and its runner is
 *    bounded in time and memory).
 */
import type { ErrorCode } from "../errors.ts";
import type { ToolArgs } from "../tools/policy.ts";
import type { ExtractOptions, ExtractResult } from "./extract.ts";

/** The tool id. */
export const DOCUMENT_TOOL_ID = "document/extract_text";
/** Its executor identity (operation ledger). */
export const DOCUMENT_EXECUTOR = "runner/extract_text/v1";

export interface DocumentCall {
  agentId: string;
  workspaceDir: string;
  args: ToolArgs;
  runKey: string;
  signal?: AbortSignal;
}

/** What a Run's tool calls see of documents. */
export interface DocumentsPort {
  extract(c: DocumentCall): Promise<ExtractResult>;
}

export interface DocumentsPortOptions {
  /** The Agent's current setting (read at each call). */
  enabled(agentId: string): boolean;
  extract(o: ExtractOptions): Promise<ExtractResult>;
}

export function documentsPort(o: DocumentsPortOptions): DocumentsPort {
  return {
    async extract(c: DocumentCall): Promise<ExtractResult> {
      let on: boolean;
      try {
        on = o.enabled(c.agentId);
      } catch {
        on = false; // an Agent that cannot be read is off (fail closed)
      }
      if (!on) return { ok: false, code: "documents_disabled" satisfies ErrorCode };
      return await o.extract({
        workspaceDir: c.workspaceDir,
        args: c.args,
        runKey: c.runKey,
        signal: c.signal,
      });
    },
  };
}
