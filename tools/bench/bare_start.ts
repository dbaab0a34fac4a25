/**
 * The floor PF-1 is measured against [PF-1]: the wall time of one bare `deno run` of an empty
 * script, from this process (spawn to exit), median. One owner for every bench that states a
 * goal in "bare Deno start-ups". The first run is left out (it fills the OS page cache and
 * Deno's own caches), and the median is of `runs` more: with 5 runs and the first one counted
 * the floor read 18.6–25.2 ms on a machine where it is 15–17 ms, which loosened every PF-1 goal
 * by up to half. A bench whose own samples spread over a while takes one floor sample beside
 * each of its own (`runs` = 1), so that both see the same machine.
 */
const BARE_START_RUNS = 15;

export async function bareDenoStartMs(runs = BARE_START_RUNS): Promise<number> {
  const dir = Deno.makeTempDirSync({ prefix: "bench-bare-" });
  try {
    const empty = `${dir}/empty.ts`;
    Deno.writeTextFileSync(empty, "");
    const times: number[] = [];
    for (let i = 0; i <= runs; i++) {
      const t0 = performance.now();
      const out = await new Deno.Command(Deno.execPath(), { args: ["run", "--quiet", empty] })
        .output();
      const ms = performance.now() - t0;
      if (!out.success) throw new Error(`bare deno run failed: ${out.code}`);
      if (i > 0) times.push(ms);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)];
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}
