/**
 * The context meter tells the truth [CX-5, CX-8]: over HTTP with the scripted
 * Ollama, the NextTurnProjection's one "used" number grows with history, is
 * exactly the sum of the breakdown's input parts, fills the window together
 * with the output reserve and free, and moves to the calibrated figure once
 * complete usages (prompt_eval_count) of the same scope arrive; `/context`
 * says which figure it shows. Exact counting [CX-7] switches on for the Qwen
 * model once its reported vocabulary is verified, and stays off (≈, with the
 * reason) for a model of another family.
 */
import { waitFor } from "../helpers/worker_procs.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { FAKE_FLEET } from "../../tools/fake_ollama/frames.ts";

type Part = { name: string; tokens: number };
const INPUT = [
  "platform",
  "instructions",
  "environment",
  "git",
  "history",
  "tools",
  "current_message",
];

function inputSum(parts: Part[]): number {
  return parts.filter((p) => INPUT.includes(p.name)).reduce((a, p) => a + p.tokens, 0);
}

Deno.test("the context meter's used tokens grow with history, equal the breakdown and calibrate", async (t) => {
  const ollama = await startFakeOllama({
    models: {
      "qwen3.5:2b": FAKE_FLEET["qwen3.5:2b"],
      "llama3.2:3b": FAKE_FLEET["llama3.2:3b"],
    },
  });
  const h = await startRunHarness({ ollama });
  try {
    const conv = await newConversation(h);
    const preview = async (model?: string) => {
      const q = model ? `?model_id=${model}` : "";
      const p = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}/context-preview${q}`);
      assertEquals(p.status, 200);
      assertEquals(p.body.available, true, JSON.stringify(p.body));
      return p.body;
    };
    /** Polls the projection until its vocabulary check settled (it runs in the background). */
    const settledPreview = async (model?: string) => {
      let p = await preview(model);
      await waitFor(
        "the vocabulary check settled",
        async () => (p = await preview(model)).counting.reason !== "tokenizer_verifying",
        120_000,
      );
      return p;
    };

    await t.step(
      "the Qwen model's verified vocabulary switches the count to exact [CX-7]",
      async () => {
        const p = await settledPreview();
        assertEquals(p.counting, {
          mode: "exact",
          estimator: "qwen3-bpe-v1",
          tokenizer: "qwen3",
          reason: null,
        });
        assertEquals(p.meter.counting, "exact");
        assertEquals(p.estimator, "qwen3-bpe-v1");
      },
    );

    await t.step(
      "another family's vocabulary differs: the upper bound stays, with the reason",
      async () => {
        const p = await settledPreview("llama3.2:3b");
        assertEquals(p.counting.mode, "upper_bound");
        assertEquals(p.counting.reason, "vocabulary_mismatch");
        assertEquals(p.meter.counting, "upper_bound");
        assertEquals(p.estimator, "utf8-bytes-upper-bound-v1");
        assertEquals(inputSum(p.breakdown.parts), p.meter.used_tokens);
        const q = await preview();
        assert(q.context_tokens < p.context_tokens, "exact counts are below the byte bound");
      },
    );

    let empty: Record<string, any> = {};
    await t.step("an empty Conversation: used = fixed context = the breakdown's sum", async () => {
      empty = await preview();
      assertEquals(empty.meter.counting, "exact");
      assertEquals(empty.meter.basis, "estimate");
      assertEquals(empty.calibration.samples, 0);
      assertEquals(empty.meter.used_tokens, empty.context_tokens);
      assertEquals(empty.context_tokens, empty.fixed_context_tokens);
      assertEquals(inputSum(empty.breakdown.parts), empty.meter.used_tokens);
      assertEquals(empty.breakdown.used, empty.meter.used_tokens);
      assertEquals(
        empty.breakdown.parts.map((p: Part) => p.name),
        [...INPUT, "output_reserve", "free"],
      );
      const whole = empty.breakdown.parts.reduce((a: number, p: Part) => a + p.tokens, 0);
      assertEquals(whole, empty.meter.window, "used + output reserve + free = the window");
      assertEquals(empty.meter.window, empty.window);
      assertEquals(empty.meter.free_tokens, empty.budget - empty.meter.used_tokens);
      assertEquals(empty.breakdown.history_turns, {
        kept: 0,
        collapsed: 0,
        omitted: 0,
        summarized: 0,
      });
      assert(empty.breakdown.parts.find((p: Part) => p.name === "tools").tokens > 0);
    });

    let one: Record<string, any> = {};
    await t.step("after one Turn the used tokens grow by the history and calibrate", async () => {
      // The real prompt count is below the estimate: the ratio comes from it.
      h.ollama.enqueue(scenarios.text("The answer is forty-two.", { promptEvalCount: 500 }));
      const r = await submit(h, conv, "What is the answer to everything?");
      await readSse(h, r.body.run_id);
      const c = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/context`);
      assertEquals(c.body.counting, { mode: "exact", estimator: "qwen3-bpe-v1" });
      assertEquals(inputSum(c.body.breakdown.parts), c.body.estimate, "a Run's breakdown too");
      one = await preview();
      assert(one.context_tokens > empty.context_tokens, "history adds to the estimate");
      assertEquals(one.history_tokens, one.context_tokens - one.fixed_context_tokens);
      assertEquals(one.breakdown.history_turns, {
        kept: 1,
        collapsed: 0,
        omitted: 0,
        summarized: 0,
      });
      assertEquals(one.calibration.samples, 1);
      assert(one.calibration.ratio > 0 && one.calibration.ratio < 1, String(one.calibration.ratio));
      assertEquals(one.meter.basis, "calibrated");
      assertEquals(one.meter.used_tokens, one.calibration.calibrated_context_tokens);
      assertEquals(one.meter.used_tokens, Math.ceil(one.context_tokens * one.calibration.ratio));
      assert(one.meter.used_tokens < one.context_tokens, "the calibrated figure moved");
      assertEquals(inputSum(one.breakdown.parts), one.meter.used_tokens);
      assertEquals(one.meter.free_tokens, one.budget - one.meter.used_tokens);
    });

    await t.step("a second Turn grows history again; the sum still holds", async () => {
      h.ollama.enqueue(scenarios.text("Still forty-two.", { promptEvalCount: 520 }));
      const r = await submit(h, conv, "And again?");
      await readSse(h, r.body.run_id);
      const two = await preview();
      assert(two.context_tokens > one.context_tokens);
      assertEquals(two.calibration.samples, 2);
      assertEquals(two.breakdown.history_turns.kept, 2);
      assertEquals(inputSum(two.breakdown.parts), two.meter.used_tokens);
      const hist = (b: Record<string, any>) =>
        b.breakdown.parts.find((p: Part) => p.name === "history").tokens;
      assert(hist(two) > hist(one));
    });

    await t.step(
      "/context shows the calibrated figure, says so, and lists every part",
      async () => {
        const r = await h.api(
          "POST",
          `/api/agents/${h.agent}/sessions/${conv}/commands`,
          { input: "/context" },
        );
        assertEquals(r.status, 200);
        const lines = new Map<string, string>(
          r.body.lines.map((l: { label: string; value: string }) => [l.label, l.value]),
        );
        const p = await preview();
        const used = p.meter.used_tokens.toLocaleString("en-US");
        assert(lines.get("Used")!.startsWith(`exact ${used} of `), lines.get("Used"));
        assert(lines.get("Used")!.endsWith(", calibrated"), lines.get("Used"));
        assert(lines.get("Calibration")!.includes("latest 2 prompt counts"));
        assert(lines.get("Counting")!.startsWith("exact with the qwen3 tokenizer"));
        for (const l of ["Platform", "History", "Tools", "Output reserve", "Free"]) {
          assert(lines.has(l), l);
        }
        assert(lines.get("History")!.includes("2 turns kept, 0 collapsed"), lines.get("History"));
      },
    );
  } finally {
    await h.close();
    await ollama.close();
  }
});
