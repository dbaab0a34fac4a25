/**
 * Attack: keep reading a live Run's event stream after the session that
 * opened it ended [GW-2, GW-3, EV-3]. On the real server with a real Run held
 * open by a stalled model: logout cuts the stream at once and the old cookie
 * cannot reattach; a token rotation (token file replaced + SIGHUP, as
 * rotate-token does) cuts the next session's stream the same way. Cutting a
 * stream never cancels the Run: a fresh login reattaches and sees it running.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { login, type LoginSession } from "../helpers/login.ts";
import { rawRequest } from "../helpers/raw_http.ts";
import { newConversation, type RunHarness, startRunHarness, submit } from "../helpers/runs.ts";
import { writeToken } from "../../runtime/secrets/bootstrap_token.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

/** Opens the Run's event stream with `s` and waits for its first frame. */
async function openStream(h: RunHarness, run: string, s: LoginSession) {
  const res = await fetch(`${h.server.url}/api/agents/${h.agent}/runs/${run}/events`, {
    headers: { cookie: s.cookie },
  });
  assertEquals(res.status, 200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  assert(!first.done && first.value.length > 0, "no first frame");
  return reader;
}

/** "ended" when the stream closes or errors within `ms`, else "open". */
async function endsWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"open">((r) => (timer = setTimeout(() => r("open"), ms)));
  const drain = (async () => {
    try {
      while (!(await reader.read()).done) { /* keep-alives or frames */ }
    } catch (err) {
      if (!(err instanceof TypeError)) throw err; // the connection was cut
    }
    return "ended" as const;
  })();
  const result = await Promise.race([drain, timeout]);
  clearTimeout(timer);
  if (result === "open") await reader.cancel();
  return result;
}

async function running(h: RunHarness, s: LoginSession, conv: string): Promise<string | null> {
  const r = await fetch(`${h.server.url}/api/agents/${h.agent}/sessions/${conv}/preparation`, {
    headers: s.headers(),
  });
  return (await r.json()).run_id;
}

Deno.test("a live Run stream ends with its session (logout or token rotation), the Run does not", async () => {
  const h = await startRunHarness();
  try {
    h.ollama.enqueue(scenarios.stall());
    const conv = await newConversation(h);
    const run = (await submit(h, conv, "hold on")).body.run_id as string;
    const events = `/api/agents/${h.agent}/runs/${run}/events`;

    // Control: the stream of a live session stays open.
    assertEquals(await endsWithin(await openStream(h, run, h.session), 300), "open");

    const stream = await openStream(h, run, h.session);
    const out = await fetch(`${h.server.url}/api/logout`, {
      method: "POST",
      headers: h.session.headers(),
    });
    assertEquals(out.status, 200);
    await out.body?.cancel();
    assertEquals(await endsWithin(stream, 3000), "ended");
    const stale = await rawRequest(h.server.port, {
      method: "GET",
      path: events,
      headers: [["cookie", h.session.cookie]],
    });
    assertEquals(stale.status, 401);

    const second = await login(h.server);
    assertEquals(await running(h, second, conv), run, "logout must not cancel the Run");
    const again = await openStream(h, run, second);
    writeToken(h.server.home, crypto.randomUUID().replaceAll("-", "").repeat(2));
    h.server.child.kill("SIGHUP");
    assertEquals(await endsWithin(again, 3000), "ended");
    const old = await rawRequest(h.server.port, {
      method: "GET",
      path: events,
      headers: [["cookie", second.cookie]],
    });
    assertEquals(old.status, 401);

    const third = await login(h.server);
    assertEquals(await running(h, third, conv), run, "rotation must not cancel the Run");
    const cancel = await fetch(`${h.server.url}/api/agents/${h.agent}/runs/${run}/cancel`, {
      method: "POST",
      headers: third.headers(),
    });
    assertEquals(cancel.status, 202);
    await cancel.body?.cancel();
  } finally {
    await h.close();
  }
});
