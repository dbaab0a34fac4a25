/**
 * [OP-2] Graceful shutdown delivers the last bytes of a response that ends
 * during shutdown: the server's `shutdown()` waits (bounded) for the
 * connection guard to relay what the HTTP server already wrote before it
 * closes the client sockets. The tail here is large on purpose (several
 * socket buffers), so a guard that closed its sockets the moment the inner
 * server finished would cut it every time, not just under load.
 */
import { assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { createGateway } from "../../runtime/http/gateway.ts";
import type { Route } from "../../runtime/http/router.ts";
import { startServer } from "../../runtime/http/server.ts";
import { silentLogger } from "../../runtime/log.ts";

const TAIL_BYTES = 16 * 1024 * 1024;

Deno.test("shutdown relays the whole tail of a stream that ends while the server stops", async () => {
  const home = makeTempHome();
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const routes: Route[] = [{
    method: "GET",
    path: "/api/test/tail",
    auth: "none",
    handler: () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            ctl = c;
            c.enqueue(new TextEncoder().encode("head\n"));
          },
        }),
        { headers: { "content-type": "text/plain" } },
      ),
  }];
  const gateway = createGateway({ root: home, log: silentLogger });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    routes,
    gateway,
    log: silentLogger,
  });
  let stopping: Promise<void> | null = null;
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/api/test/tail`);
    assertEquals(res.status, 200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assertEquals(new TextDecoder().decode(first.value), "head\n");
    // The stream's last bytes and its end arrive exactly as shutdown begins.
    const tail = new Uint8Array(TAIL_BYTES).fill(0x61);
    tail[TAIL_BYTES - 1] = 0x7a;
    ctl.enqueue(tail);
    ctl.close();
    stopping = server.shutdown();
    let received = 0;
    let last = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received += value.length;
      last = value[value.length - 1];
    }
    await stopping;
    assertEquals(received, TAIL_BYTES);
    assertEquals(last, 0x7a);
  } finally {
    await (stopping ?? server.shutdown());
    await server.finished;
    await Deno.remove(home, { recursive: true });
  }
});
