/**
 * One row of the benchmark table [PF-6]. Each *_bench.ts prints its own
 * prose report and, for each figure that matters, calls `measure(...)`; when
 * `tools/bench/table.ts` runs it, the rows are appended (one JSON line each)
 * to the file named by BENCH_RESULTS, and the table is printed at the end.
 * Run alone, a bench prints only its prose (nothing is written).
 *
 * A goal is a bound with its direction; ratio = value ÷ bound, so a `max`
 * goal is met at ratio ≤ 1 and a `min` goal at ratio ≥ 1. A bound that is
 * itself measured in the same run (e.g. "2 × a bare Deno start-up") is passed
 * as its number with the text saying what it is.
 */

export interface Goal {
  kind: "max" | "min";
  /** The bound, in the row's unit. */
  bound: number;
  /** How the goal reads, e.g. "≤ 64 KiB [PF-4]". */
  text: string;
}

export interface Measure {
  bench: string;
  measure: string;
  value: number;
  unit: string;
  goal: Goal | null;
}

/** The fields bench-results.json holds per row. */
export interface MeasureRow extends Measure {
  /** value ÷ goal bound, or null without a goal. */
  ratio: number | null;
  /** Whether the goal is met, or null without a goal. */
  met: boolean | null;
}

export function toRow(m: Measure): MeasureRow {
  if (m.goal === null || m.goal.bound === 0) return { ...m, ratio: null, met: null };
  const ratio = m.value / m.goal.bound;
  return { ...m, ratio, met: m.goal.kind === "max" ? ratio <= 1 : ratio >= 1 };
}

/** Records one row for the table (a no-op unless BENCH_RESULTS is set). */
export function measure(
  bench: string,
  name: string,
  value: number,
  unit: string,
  goal: Goal | null = null,
): void {
  const path = Deno.env.get("BENCH_RESULTS");
  if (!path) return;
  const row: Measure = { bench, measure: name, value, unit, goal };
  Deno.writeTextFileSync(path, JSON.stringify(row) + "\n", { append: true });
}

/** A `max` goal. */
export const atMost = (bound: number, text: string): Goal => ({ kind: "max", bound, text });
/** A `min` goal. */
export const atLeast = (bound: number, text: string): Goal => ({ kind: "min", bound, text });
