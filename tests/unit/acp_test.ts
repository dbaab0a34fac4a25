/**
 * Pure parts of the ACP client [LC-6]: the runner flags (argv split on
 * spaces, no shell; explicit environment), the NDJSON/JSON-RPC framing bounds
 * and refusals, workspace path mapping and UTF-8 cuts.
 */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { parseRunnerFlags, RunnerFlagError } from "../../runtime/acp/runners.ts";
import { AcpFault, RpcConnection } from "../../runtime/acp/jsonrpc.ts";
import { historyPrefix, workspaceRelative } from "../../runtime/acp/acp_turn.ts";
import { cutUtf8 } from "../../runtime/acp/event_map.ts";
import { ACP_PEER_REQUESTS_MAX, ACP_RUNNERS_MAX } from "../../runtime/limits.ts";

const env = (m: Record<string, string>) => (k: string) => m[k];

Deno.test("parseRunnerFlags() splits COMMAND on spaces with no shell, quoting or expansion", () => {
  const [r] = parseRunnerFlags(['x=/bin/echo  "a b" $HOME; rm -rf /'], [], env({}));
  assertEquals(r.argv, ["/bin/echo", '"a', 'b"', "$HOME;", "rm", "-rf", "/"]);
});

Deno.test("parseRunnerFlags() gives the runner PATH, HOME and only the variables named for it", () => {
  const get = env({ PATH: "/p", HOME: "/h", SECRET: "s", TOKEN: "t" });
  const rs = parseRunnerFlags(["a=/a", "b=/b"], ["a=TOKEN", "a=MISSING"], get);
  assertEquals({ ...rs[0].env }, { PATH: "/p", HOME: "/h", TOKEN: "t" });
  assertEquals(rs[0].forwarded, ["TOKEN", "MISSING"]);
  assertEquals({ ...rs[1].env }, { PATH: "/p", HOME: "/h" });
});

Deno.test("parseRunnerFlags() refuses bad names, duplicates, empty commands and too many runners", () => {
  for (
    const [runners, envs] of [
      [["Bad=/x"], []],
      [["=/x"], []],
      [["a=/x", "a=/y"], []],
      [["a=   "], []],
      [["a=/x"], ["b=TOKEN"]],
      [["a=/x"], ["a=NOT-A-NAME"]],
      [Array.from({ length: ACP_RUNNERS_MAX + 1 }, (_, i) => `r${i}=/x`), []],
    ] as [string[], string[]][]
  ) {
    assertThrows(() => parseRunnerFlags(runners, envs, env({})), (e) => {
      assert(e instanceof RunnerFlagError);
    });
  }
  assertEquals(
    parseRunnerFlags(Array.from({ length: ACP_RUNNERS_MAX }, (_, i) => `r${i}=/x`), [], env({}))
      .length,
    ACP_RUNNERS_MAX,
  );
});

/** A connection fed `lines` by a fake peer; returns how it ended. */
function connect(opts: { lineMaxBytes?: number; request?: () => Promise<unknown> } = {}) {
  const stream = new TransformStream<Uint8Array, Uint8Array>();
  const writer = stream.writable.getWriter();
  const sent: string[] = [];
  const c = new RpcConnection({
    readable: stream.readable,
    write: (b) => {
      sent.push(new TextDecoder().decode(b));
      return Promise.resolve();
    },
    handlers: {
      request: opts.request ?? (() => Promise.resolve({})),
      notification: () => undefined,
    },
    lineMaxBytes: opts.lineMaxBytes,
  });
  const feed = (s: string) => writer.write(new TextEncoder().encode(s));
  return { c, feed, sent, end: () => writer.close() };
}

Deno.test("RpcConnection takes a line at its byte bound and refuses one byte past it", async () => {
  const msg = JSON.stringify({ jsonrpc: "2.0", method: "n", params: {} });
  const ok = connect({ lineMaxBytes: msg.length });
  await ok.feed(msg + "\n");
  await ok.feed(msg.slice(0, 5));
  await ok.feed(msg.slice(5) + "\n");
  assertEquals(ok.c.fault, null);
  await ok.end();
  assertEquals((await ok.c.ended).code, "runner_crashed");
  const past = connect({ lineMaxBytes: msg.length });
  await past.feed(msg + " \n");
  assertEquals((await past.c.ended).code, "runner_protocol_error");
});

Deno.test("RpcConnection ends with runner_protocol_error on bad JSON, batches and stray responses", async () => {
  for (
    const line of [
      "{not json",
      '[{"jsonrpc":"2.0","method":"x"}]',
      '{"jsonrpc":"1.0","method":"x"}',
      '{"jsonrpc":"2.0","id":7,"result":{}}',
      '{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}',
      "42",
    ]
  ) {
    const k = connect();
    await k.feed(line + "\n");
    assertEquals((await k.c.ended).code, "runner_protocol_error", line);
  }
});

Deno.test("RpcConnection rejects every waiter with the fault that ended it", async () => {
  const k = connect();
  const p = k.c.request("session/prompt", {}).catch((e) => e);
  await k.feed("garbage\n");
  const err = await p;
  assert(err instanceof AcpFault);
  assertEquals(err.code, "runner_protocol_error");
});

Deno.test("RpcConnection allows ACP_PEER_REQUESTS_MAX open peer requests and refuses one more", async () => {
  const never = () => new Promise<unknown>(() => undefined);
  const k = connect({ request: never });
  const req = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "fs/read_text_file" });
  for (let i = 1; i <= ACP_PEER_REQUESTS_MAX; i++) await k.feed(req(i) + "\n");
  assertEquals(k.c.fault, null);
  await k.feed(req(99) + "\n");
  assertEquals((await k.c.ended).code, "runner_protocol_error");
});

Deno.test("workspaceRelative() maps only absolute paths inside the workspace", () => {
  const ws = "/home/x/data/agents/a/workspace";
  assertEquals(workspaceRelative(ws, `${ws}/src/a.ts`), "src/a.ts");
  for (
    const p of [
      "/etc/passwd",
      `${ws}`,
      `${ws}/`,
      `${ws}/../escape`,
      `${ws}/a/../../escape`,
      `${ws}/./a`,
      `${ws}-evil/a`,
      `${ws}//a`,
      "src/a.ts",
      `${ws}/a\u0000b`,
    ]
  ) {
    assertEquals(workspaceRelative(ws, p), null, p);
  }
});

Deno.test("cutUtf8() cuts on a code point and says so", () => {
  assertEquals(cutUtf8("héllo", 6), { text: "héllo", cut: false });
  assertEquals(cutUtf8("héllo", 2), { text: "h", cut: true });
  assertEquals(cutUtf8("😀x", 3), { text: "", cut: true });
});

Deno.test("historyPrefix() keeps the newest Turns within its bound", () => {
  assertEquals(historyPrefix([]), "");
  const big = "x".repeat(20_000);
  const p = historyPrefix([
    { turnId: "1", user: "old", assistant: big },
    { turnId: "2", user: "new", assistant: big },
  ]);
  assert(p.includes("User: new"));
  assert(!p.includes("User: old"));
});
