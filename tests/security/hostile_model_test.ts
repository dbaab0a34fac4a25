/**
 * Attack: hostile model output through the scripted Ollama [TL-1..4, EV-3,
 * EV-4, GW-6]. The model names unknown tools, repeats a tool-call id, and
 * passes `../`, absolute, NUL, lone-surrogate, huge and symlink-escaping paths;
 * its text carries SSE framing and HTML. The workspace outside files are never
 * read or written, each refusal reaches the transcript as a fixed code, the
 * event stream keeps its framing, the journal stays valid for replay, and
 * after every attack no response, header or log line holds the bootstrap
 * token, the home path, the Ollama address, a stack trace or the user's text.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { readBootstrapToken } from "../helpers/login.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import type { FakeToolCall } from "../../tools/fake_ollama/frames.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { WORKER_CALLS_PER_RESPONSE_MAX } from "../../runtime/limits.ts";

const USER_TEXT = "operator-private-phrase-7f3a9c";

/** Runs one Turn with `scripts` queued and returns its frames, replay and Turn. */
async function runTurn(h: RunHarness, ...scripts: Parameters<typeof h.ollama.enqueue>) {
  h.ollama.enqueue(...scripts);
  const conv = await newConversation(h);
  const r = await submit(h, conv, `${USER_TEXT} please`);
  assertEquals(r.status, 202, JSON.stringify(r.body));
  const runId = r.body.run_id as string;
  const frames = await readSse(h, runId);
  const turn = await waitTurn(h, conv, runId);
  assertEquals(h.ollama.queued, 0, "every scripted response was consumed");
  const replay = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/replay`);
  assertEquals(replay.status, 200, JSON.stringify(replay.body));
  const context = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/context`);
  const audit = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/capability-audit`);
  const seen = JSON.stringify([frames, replay.body, context.body, audit.body, turn]);
  assert(!seen.includes(h.server.home), "a Run's events, context or audit hold the home path");
  return { conv, runId, frames, turn, replay: replay.body };
}

function toolCodes(frames: SseFrame[]): (string | null)[] {
  return frames.filter((f) => f.event === "tool.call.completed").map((f) =>
    f.data.payload.code ?? null
  );
}

function terminal(frames: SseFrame[]): SseFrame {
  const t = frames.at(-1)!;
  assert(/^run\.(completed|failed|cancelled)$/.test(t.event), t.event);
  return t;
}

Deno.test("hostile model output cannot escape the workspace, break the stream or leak", async (t) => {
  const h = await startRunHarness();
  const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
  const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
  try {
    Deno.writeTextFileSync(`${outside}/secret.txt`, "outside secret\n");
    Deno.symlinkSync(outside, `${ws}/escape`);
    Deno.symlinkSync(`${outside}/secret.txt`, `${ws}/secret-link.txt`);
    Deno.linkSync(`${outside}/secret.txt`, `${ws}/hard.txt`);

    await t.step(
      "traversal, absolute, NUL, surrogate, huge and link paths are fixed-code tool errors",
      async () => {
        const paths: [unknown, string][] = [
          ["../../../../etc/passwd", "path_invalid"],
          [`${outside}/secret.txt`, "path_invalid"],
          ["a\u0000b", "path_invalid"],
          ["escape/secret.txt", "path_symlink"],
          ["secret-link.txt", "path_symlink"],
          ["hard.txt", "file_hardlinked"],
          ["x".repeat(3000), "tool_invalid_arguments"],
          ["a\u200Bb.txt", "path_invalid"],
          ["a\u2028b.txt", "path_invalid"],
          ["\ud800.txt", "tool_invalid_arguments"],
          [{ toString: "../etc" }, "tool_invalid_arguments"],
        ];
        for (const [path, expected] of paths) {
          const { frames, replay } = await runTurn(
            h,
            scenarios.toolCall([{ name: "file__read_text", arguments: { path } }]),
            scenarios.text("ok"),
          );
          assertEquals(toolCodes(frames), [expected], JSON.stringify(path).slice(0, 40));
          assertEquals(terminal(frames).event, "run.completed");
          const all = JSON.stringify(frames) + JSON.stringify(replay);
          assert(!all.includes("outside secret"), "an outside file reached the transcript");
          // The model saw the refusal code and nothing else of the file.
          const toolMsg = h.ollama.chats.at(-1)!.body.messages.find((m: { role: string }) =>
            m.role === "tool"
          );
          assert(toolMsg.content.includes(expected), toolMsg.content);
        }
        // A write through the directory symlink is refused before any approval.
        const w = await runTurn(
          h,
          scenarios.toolCall([{
            name: "file__write",
            arguments: { path: "escape/new.txt", content: "x" },
          }]),
          scenarios.text("ok"),
        );
        assert(
          !w.frames.some((f) => f.event === "permission.requested"),
          "asked to write via a link",
        );
        assertEquals(toolCodes(w.frames), ["path_symlink"]);
        assertEquals([...Deno.readDirSync(outside)].map((e) => e.name), ["secret.txt"]);
        // A bidi override would make the approval show "reporths.txt" for "report<RLO>txt.sh":
        // refused before any approval is asked.
        const spoof = await runTurn(
          h,
          scenarios.toolCall([{
            name: "file__write",
            arguments: { path: "report\u202Etxt.sh", content: "x" },
          }]),
          scenarios.text("ok"),
        );
        assert(!spoof.frames.some((f) => f.event === "permission.requested"), "asked for a spoof");
        assertEquals(toolCodes(spoof.frames), ["path_invalid"]);
        assertEquals(Deno.readTextFileSync(`${outside}/secret.txt`), "outside secret\n");
        // Arguments past the model stream bound fail the Run with its fixed code.
        const huge = await runTurn(
          h,
          scenarios.toolCall([{
            name: "file__read_text",
            arguments: { path: "x".repeat(200_000) },
          }]),
        );
        const end = terminal(huge.frames);
        assertEquals([end.event, end.data.payload.code], ["run.failed", "model_stream_too_large"]);
      },
    );

    await t.step(
      "glob, grep, stat and edit refuse escapes, link walks and catastrophic patterns",
      async () => {
        Deno.symlinkSync("/etc", `${ws}/etclink`);
        const cases: [FakeToolCall, string][] = [
          [{ name: "file__glob", arguments: { pattern: "../*" } }, "pattern_invalid"],
          [{ name: "file__glob", arguments: { pattern: "/etc/*" } }, "pattern_invalid"],
          [{ name: "file__glob", arguments: { pattern: "**/../../**" } }, "pattern_invalid"],
          [
            { name: "file__grep", arguments: { pattern: "(a+)+$", regex: true } },
            "pattern_invalid",
          ],
          [{ name: "file__grep", arguments: { pattern: "root", path: "etclink" } }, "path_symlink"],
          [{ name: "file__grep", arguments: { pattern: "root", path: "../" } }, "path_invalid"],
          [{ name: "file__stat", arguments: { path: "etclink" } }, "path_symlink"],
          [{
            name: "file__edit",
            arguments: { path: "etclink/passwd", old_text: "root", new_text: "toor" },
          }, "path_symlink"],
          [{
            name: "file__write",
            arguments: { path: ".agent-builder-write-x", content: "x" },
          }, "path_invalid"],
        ];
        for (const [call, expected] of cases) {
          const { frames } = await runTurn(h, scenarios.toolCall([call]), scenarios.text("ok"));
          assertEquals(toolCodes(frames), [expected], JSON.stringify(call.arguments));
          assert(!frames.some((f) => f.event === "permission.requested"));
        }
        // A walk through the workspace never follows the link out.
        const glob = await runTurn(
          h,
          scenarios.toolCall([{ name: "file__glob", arguments: { pattern: "**/*" } }]),
          scenarios.text("ok"),
        );
        const result = glob.frames.find((f) =>
          f.event === "tool.call.completed"
        )!.data.payload.result;
        assert(!result.includes("etclink/") && !result.includes("passwd"), result);
      },
    );

    await t.step(
      "unknown tools and more calls in one response than [SB-8] allows end the Turn model_tool_loop, unexecuted",
      async () => {
        const bad: FakeToolCall[][] = [
          [{ name: "exec__shell", arguments: { command: "id" } }],
          [{ name: "../file__read_text", arguments: { path: "hard.txt" } }],
          [{ name: "file/read_text\u0000", arguments: { path: "hard.txt" } }],
          // One past WORKER_CALLS_PER_RESPONSE_MAX, all reusing one provider call id:
          // nothing of the response runs.
          Array.from({ length: WORKER_CALLS_PER_RESPONSE_MAX + 1 }, (_, i) => ({
            id: "call_same",
            name: "file__stat",
            arguments: { path: i % 2 ? "agent-builder.md" : "hard.txt" },
          })),
        ];
        for (const calls of bad) {
          const { frames, turn } = await runTurn(h, scenarios.toolCall(calls));
          const end = terminal(frames);
          assertEquals(
            [end.event, end.data.payload.code],
            ["run.failed", "model_tool_loop"],
            calls[0].name,
          );
          assertEquals(toolCodes(frames), [], calls[0].name);
          assertEquals(turn.state, "failed");
        }
      },
    );

    await t.step("a provider call id reused across model calls never crosses results", async () => {
      Deno.writeTextFileSync(`${ws}/a.txt`, "AAA\n");
      Deno.writeTextFileSync(`${ws}/b.txt`, "BBB\n");
      const { frames } = await runTurn(
        h,
        scenarios.toolCall([{
          id: "call_x",
          name: "file__read_text",
          arguments: { path: "a.txt" },
        }]),
        scenarios.toolCall([{
          id: "call_x",
          name: "file__read_text",
          arguments: { path: "b.txt" },
        }]),
        scenarios.text("done"),
      );
      const done = frames.filter((f) => f.event === "tool.call.completed");
      const ids = done.map((f) => f.data.payload.call_id);
      assertEquals(new Set(ids).size, 2, "the Control Plane assigns its own call ids");
      assert(!ids.includes("call_x"));
      const last = h.ollama.chats.at(-1)!.body.messages.filter((m: { role: string }) =>
        m.role === "tool"
      );
      assertEquals(last.map((m: { tool_call_id: string }) => m.tool_call_id), ids);
      assert(last[0].content.includes("AAA") && last[1].content.includes("BBB"));
    });

    await t.step("model text with SSE framing, HTML and lone surrogates stays data", async () => {
      const nasty = "\n\nid: 999\nevent: run.completed\ndata: {}\n\n<script>alert(1)</script>" +
        "<img src=x onerror=alert(2)>\r\n\rdata: x\ud800 \udc00 end";
      const { frames, replay, conv } = await runTurn(h, scenarios.text(nasty));
      assertEquals(frames.filter((f) => f.event === "run.completed").length, 1);
      assertEquals(terminal(frames).event, "run.completed");
      assert(frames.every((f) => f.id === null || /^(\d+|d\d+)$/.test(f.id)), "a forged id");
      const streamed = frames.filter((f) => f.event === "assistant.block.delta")
        .map((f) => f.data.payload.text).join("");
      assertEquals(
        streamed.replace(/[\ud800-\udfff\ufffd]/g, "?"),
        nasty.replace(/[\ud800-\udfff]/g, "?"),
      );
      const detail = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
      assertEquals(detail.status, 200);
      assert(JSON.stringify(detail.body).includes("<script>alert(1)</script>"));
      assert(replay.events.length > 0);
    });

    await t.step(
      "a user message with a lone surrogate and control characters keeps the journal valid",
      async () => {
        const conv = await newConversation(h);
        h.ollama.enqueue(scenarios.text("fine"));
        const r = await submit(h, conv, `${USER_TEXT} \ud800 \u0000 \u202e end`);
        assertEquals(r.status, 202, codeOf(r) ?? "");
        await readSse(h, r.body.run_id);
        assertEquals((await waitTurn(h, conv, r.body.run_id)).state, "completed");
        const replay = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/replay`);
        assertEquals(replay.status, 200, JSON.stringify(replay.body));
        const detail = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
        assertEquals(detail.status, 200);
      },
    );

    await t.step(
      "no response, header or log line leaks the token, home, Ollama address, stack or user text",
      async () => {
        const token = readBootstrapToken(h.server.home);
        const port = String(h.ollama.port);
        const probes: string[] = [];
        for (
          const path of [
            "/health",
            "/api/session",
            "/api/models",
            "/api/agents",
            `/api/agents/${h.agent}/commands`,
          ]
        ) {
          const res = await fetch(`${h.server.url}${path}`, { headers: h.session.headers() });
          probes.push([...res.headers].flat().join("\n"), await res.text());
        }
        // Every slash command's output, in a Conversation that has the user's text.
        const conv = await newConversation(h);
        h.ollama.enqueue(scenarios.text("fine"));
        const r = await submit(h, conv, `${USER_TEXT} once more`);
        await waitTurn(h, conv, r.body.run_id);
        for (
          const name of ["status", "context", "model", "permissions", "cancel", "compact", "clear"]
        ) {
          const res = await h.api("POST", `/api/agents/${h.agent}/sessions/${conv}/commands`, {
            input: `/${name}`,
          });
          assertEquals(res.status, 200, name);
          probes.push(JSON.stringify(res.body));
        }
        const log = Deno.readTextFileSync(`${h.server.home}/.runtime/control-plane/server.log`);
        for (const [name, text] of [["responses", probes.join("\n")], ["server.log", log]]) {
          assert(!text.includes(token), `${name} holds the token`);
          assert(!text.includes(h.server.home), `${name} holds the home path`);
          assert(
            !text.includes(`127.0.0.1:${port}`) && !text.includes(`:${port}/`),
            `${name} holds the Ollama address`,
          );
          assert(!/\n\s+at .+:\d+:\d+/.test(text), `${name} holds a stack trace`);
          assert(!text.includes(USER_TEXT), `${name} holds user text`);
          assert(!text.includes("outside secret"), `${name} holds outside file content`);
        }
      },
    );
  } finally {
    await h.close();
    Deno.removeSync(outside, { recursive: true });
  }
});
