/**
 * Context preparation as a real, cancellable operation [CX-1, CX-3, §13]:
 * reading the trusted inputs, compiling the ContextPlan and admitting (and
 * if needed collapsing) the first call of a Run — or of a `/compact` Run —
 * before anything durable is written.
 *
 * What this file enforces:
 * - one preparation at a time per Conversation (a second one is 409
 *   `conversation_busy`); every operation has an unguessable id, a phase and
 *   a start time, readable through `current()`;
 * - cancel reaches only an in-flight operation of the SAME Agent and
 *   Conversation (unknown or foreign ids are `preparation_not_found`, 404);
 *   an operation that already finished is `preparation_finished` (409);
 * - a cancelled operation stops at its next phase boundary — or at once while
 *   its test-only pause is waiting — with `preparation_cancelled`, and it can
 *   never be committed: `commit()` is the single point after which cancel no
 *   longer applies (the Run then has its own cancel);
 * - finished operations are remembered (for the 409) up to
 *   PREPARATIONS_FINISHED_REMEMBERED, oldest forgotten first.
 */
import { AppError } from "../errors.ts";
import { PREPARATIONS_FINISHED_REMEMBERED } from "../limits.ts";

export type PreparationKind = "run" | "compact";
export const PREPARATION_PHASES = [
  "reading_inputs",
  "compiling",
  "admitting",
  "committing",
] as const;
export type PreparationPhase = typeof PREPARATION_PHASES[number];
export type PreparationOutcome = "committed" | "cancelled" | "failed";

/**
 * Test-only pause at the start of a phase (see runtime/runs/test_hooks.ts). It
 * must settle when `signal` aborts. Production passes none.
 */
export type PhasePause = (phase: PreparationPhase, signal: AbortSignal) => Promise<void>;

export interface PreparationView {
  operation_id: string;
  kind: PreparationKind;
  phase: PreparationPhase;
  started_at: number;
}

interface Finished {
  agentId: string;
  conversationId: string;
  outcome: PreparationOutcome;
}

export class PreparationOperation {
  readonly id = crypto.randomUUID();
  #phase: PreparationPhase = "reading_inputs";
  #settled = false;
  readonly #controller = new AbortController();

  constructor(
    readonly agentId: string,
    readonly conversationId: string,
    readonly kind: PreparationKind,
    readonly startedAt: number,
    private readonly owner: Preparations,
    private readonly pause: PhasePause | null,
  ) {}

  get phase(): PreparationPhase {
    return this.#phase;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get committed(): boolean {
    return this.#phase === "committing";
  }

  view(): PreparationView {
    return {
      operation_id: this.id,
      kind: this.kind,
      phase: this.#phase,
      started_at: this.startedAt,
    };
  }

  /** Enters `phase`; throws `preparation_cancelled` if cancel arrived before or during it. */
  async enter(phase: Exclude<PreparationPhase, "committing">): Promise<void> {
    this.#throwIfCancelled();
    this.#phase = phase;
    if (this.pause) await this.pause(phase, this.#controller.signal);
    this.#throwIfCancelled();
  }

  /** The point of no return: after this, cancel is 409 and the Run's own cancel applies. */
  commit(): void {
    this.#throwIfCancelled();
    this.#phase = "committing";
  }

  /** Requests cancellation; false when the operation is already past its commit point. */
  abort(): boolean {
    if (this.#phase === "committing" || this.#settled) return false;
    this.#controller.abort();
    return true;
  }

  /** Ends the operation (always called once, in a finally). */
  settle(outcome: PreparationOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    this.owner.settled(this, outcome);
  }

  #throwIfCancelled(): void {
    if (this.#controller.signal.aborted) throw new AppError("preparation_cancelled");
  }
}

export class Preparations {
  readonly #inFlight = new Map<string, PreparationOperation>();
  readonly #finished = new Map<string, Finished>();

  constructor(
    private readonly now: () => number,
    private readonly pause: PhasePause | null = null,
  ) {}

  /** Starts the preparation of a Conversation's next Run. */
  begin(agentId: string, conversationId: string, kind: PreparationKind): PreparationOperation {
    if (this.current(agentId, conversationId)) throw new AppError("conversation_busy");
    const op = new PreparationOperation(
      agentId,
      conversationId,
      kind,
      this.now(),
      this,
      this.pause,
    );
    this.#inFlight.set(op.id, op);
    return op;
  }

  /** The in-flight preparation of a Conversation, if any. */
  current(agentId: string, conversationId: string): PreparationOperation | null {
    for (const op of this.#inFlight.values()) {
      if (op.agentId === agentId && op.conversationId === conversationId) return op;
    }
    return null;
  }

  /** POST …/preparation/cancel: 202 for a matching in-flight id. */
  cancel(agentId: string, conversationId: string, operationId: string) {
    const mine = (o: { agentId: string; conversationId: string }) =>
      o.agentId === agentId && o.conversationId === conversationId;
    const op = this.#inFlight.get(operationId);
    if (op && mine(op)) {
      if (!op.abort()) throw new AppError("preparation_finished");
      return { operation_id: operationId, state: "cancelling" as const };
    }
    const done = this.#finished.get(operationId);
    if (done && mine(done)) throw new AppError("preparation_finished");
    throw new AppError("preparation_not_found");
  }

  /** Aborts every in-flight preparation of an Agent (its upgrade or delete is fencing it). */
  abortAgent(agentId: string): void {
    for (const op of this.#inFlight.values()) if (op.agentId === agentId) op.abort();
  }

  /** Called by the operation itself when it ends. */
  settled(op: PreparationOperation, outcome: PreparationOutcome): void {
    if (this.#inFlight.get(op.id) !== op) return;
    this.#inFlight.delete(op.id);
    this.#finished.set(op.id, {
      agentId: op.agentId,
      conversationId: op.conversationId,
      outcome,
    });
    while (this.#finished.size > PREPARATIONS_FINISHED_REMEMBERED) {
      this.#finished.delete(this.#finished.keys().next().value!);
    }
  }

  /** How a finished operation ended (null when unknown or forgotten). */
  outcome(operationId: string): PreparationOutcome | null {
    return this.#finished.get(operationId)?.outcome ?? null;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }
}
