/**
 * [PF-6] The benchmark table's rows: ratio = value ÷ goal bound, a `max` goal
 * met at ≤ 1 and a `min` goal at ≥ 1, no ratio without a goal; `measure`
 * appends one JSON line to BENCH_RESULTS and writes nothing without it.
 * (No timings are asserted: the figures themselves live in tools/bench/.)
 */
import { assertEquals } from "../helpers/assert.ts";
import { atLeast, atMost, measure, toRow } from "../../tools/bench/report.ts";

Deno.test("a benchmark row's ratio is its value over the goal's bound, met on the goal's side", () => {
  const row = (value: number, goal: ReturnType<typeof atMost> | null) =>
    toRow({ bench: "b", measure: "m", value, unit: "ms", goal });
  assertEquals([row(64, atMost(64, "≤ 64")).ratio, row(64, atMost(64, "≤ 64")).met], [1, true]);
  assertEquals([row(65, atMost(64, "≤ 64")).met, row(32, atMost(64, "≤ 64")).ratio], [false, 0.5]);
  assertEquals([row(2, atLeast(2, "≥ 2")).met, row(1, atLeast(2, "≥ 2")).met], [true, false]);
  assertEquals([row(5, null).ratio, row(5, null).met], [null, null]);
});

Deno.test("measure appends one JSON line per row to BENCH_RESULTS and nothing without it", () => {
  const file = Deno.makeTempFileSync();
  const before = Deno.env.get("BENCH_RESULTS");
  try {
    Deno.env.delete("BENCH_RESULTS");
    measure("b", "ignored", 1, "ms");
    assertEquals(Deno.readTextFileSync(file), "");
    Deno.env.set("BENCH_RESULTS", file);
    measure("b", "first", 1, "ms");
    measure("b", "second", 2, "B", atMost(4, "≤ 4"));
    const rows = Deno.readTextFileSync(file).trim().split("\n").map((l) => JSON.parse(l));
    assertEquals(rows.map((r) => [r.measure, r.value, r.goal?.bound ?? null]), [
      ["first", 1, null],
      ["second", 2, 4],
    ]);
  } finally {
    if (before === undefined) Deno.env.delete("BENCH_RESULTS");
    else Deno.env.set("BENCH_RESULTS", before);
    Deno.removeSync(file);
  }
});
