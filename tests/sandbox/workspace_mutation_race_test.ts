/**
 * Writers racing on one target [TL-6]: four processes commit plans made from
 * the same receipt at the same moment. Exactly one wins, the rest see
 * file_changed, and the file always holds one complete version — never a torn
 * mix, neither at the end nor for a reader sampling it throughout the race —
 * with no temp left behind.
 */
import { assert, assertEquals } from "../helpers/assert.ts";

Deno.test("four processes writing one target leave exactly one complete version", async () => {
  const ws = Deno.makeTempDirSync({ prefix: "ab-race-" });
  const control = Deno.makeTempDirSync({ prefix: "ab-race-ctl-" });
  try {
    Deno.chmodSync(ws, 0o700);
    Deno.writeTextFileSync(`${ws}/target.txt`, "original\n", { mode: 0o600 });
    const racer = new URL("./fixtures/write_racer.ts", import.meta.url).pathname;
    const config = new URL("../../deno.json", import.meta.url).pathname;
    const labels = ["w0", "w1", "w2", "w3"];
    const children = labels.map((l) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--config", config, "-A", racer, ws, control, l],
        stdout: "piped",
        stderr: "piped",
      }).spawn()
    );
    for (let i = 0; i < 3000; i++) {
      const ready = [...Deno.readDirSync(control)].filter((e) => e.name.startsWith("ready-"));
      if (ready.length === labels.length) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    Deno.writeTextFileSync(`${control}/go`, "");
    let finished = false;
    const all = Promise.all(children.map((c) => c.output())).finally(() => finished = true);
    // A reader racing the writers must only ever see one complete version.
    const complete = new Set(["original\n", ...labels.map((l) => `${l}\n`.repeat(1000))]);
    let samples = 0;
    for (let i = 0; i < 100_000 && !finished; i++) {
      const seen = Deno.readTextFileSync(`${ws}/target.txt`);
      assert(complete.has(seen), `torn read of ${seen.length} chars`);
      samples++;
      await new Promise((r) => setTimeout(r, 0));
    }
    assert(samples > 0);
    const outs = await all;
    const results = outs.map((o) => {
      assertEquals(o.code, 0, new TextDecoder().decode(o.stderr));
      return JSON.parse(new TextDecoder().decode(o.stdout)) as { label: string; code: string };
    });
    const winners = results.filter((r) => r.code === "replaced");
    assertEquals(winners.length, 1, JSON.stringify(results));
    // A loser sees the winner's file (file_changed) or, on a loaded host, gives up
    // waiting for the winner's lock at its 2 s deadline (file_timeout): both fail closed.
    for (const r of results) {
      if (r !== winners[0]) assert(["file_changed", "file_timeout"].includes(r.code), r.code);
    }
    const final = Deno.readTextFileSync(`${ws}/target.txt`);
    assertEquals(final, `${winners[0].label}\n`.repeat(1000));
    const left = [...Deno.readDirSync(ws)].map((e) => e.name);
    assertEquals(left, ["target.txt"]);
    assert(((Deno.statSync(`${ws}/target.txt`).mode ?? 0) & 0o777) === 0o600);
  } finally {
    Deno.removeSync(ws, { recursive: true });
    Deno.removeSync(control, { recursive: true });
  }
});
