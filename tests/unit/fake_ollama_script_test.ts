/**
 * The scripted Ollama server's long tool sequences [SB-8]: `scriptedTools`
 * answers each request of a Turn with the next step (found from the tool
 * results already in the request, so grouped calls count as one step) and
 * finally reports one line per tool result it was sent.
 */
import { assertEquals } from "../helpers/assert.ts";
import type { FakeToolCall } from "../../tools/fake_ollama/frames.ts";
import { scriptedTools } from "../../tools/fake_ollama/scenarios.ts";
import type { ChatScript, RecordedChat, Step } from "../../tools/fake_ollama/server.ts";

function chat(messages: unknown[]): RecordedChat {
  return {
    method: "POST",
    path: "/api/chat",
    headers: {},
    body: { model: "m", messages },
    at: 0,
    model: "m",
  } as unknown as RecordedChat;
}

function frames(script: ChatScript): Record<string, unknown>[] {
  if (script.kind !== "stream") throw new Error("not a stream");
  return [...script.steps].flatMap((s: Step) => "frame" in s ? [s.frame] : []);
}

const call = (name: string, path: string): FakeToolCall => ({ name, arguments: { path } });
const tool = (name: string, content: string) => ({ role: "tool", tool_name: name, content });

Deno.test("scriptedTools: each request gets the step its tool results have reached, then the report", () => {
  const steps = [[call("file__stat", "a")], [
    call("file__read_text", "b"),
    call("file__stat", "c"),
  ]];
  const src = scriptedTools(steps);
  const play = (messages: unknown[]) =>
    frames(typeof src === "function" ? src(chat(messages)) : src);

  const first = play([{ role: "user", content: "go" }]);
  assertEquals((first[0].message as { tool_calls: unknown[] }).tool_calls.length, 1);

  const second = play([{ role: "user", content: "go" }, tool("file__stat", "A")]);
  assertEquals((second[0].message as { tool_calls: unknown[] }).tool_calls.length, 2);

  const report = play([
    { role: "user", content: "go" },
    tool("file__stat", "A"),
    tool("file__read_text", "B line 1\nB line 2"),
    tool("file__stat", "C"),
  ]);
  const text = report.map((f) => (f.message as { content?: string })?.content ?? "").join("");
  assertEquals(
    text,
    "The tools returned:\n1. file__stat: A\n2. file__read_text: B line 1\n3. file__stat: C\n",
  );
});
