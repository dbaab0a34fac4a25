/**
 * Attack: a local process without the token reaches Deno.serve's internal
 * loopback port directly, posing as one of the connection guard's relays
 * [GW-1]. The server recognises relays by their local port; a process can
 * bind the SAME source port on another loopback address (127.0.0.2:X is a
 * different 4-tuple from the relay's 127.0.0.1:X) and was then served as if
 * the guard had opened it, outside the connection cap and idle timeout.
 * Proven on the real server code and real sockets: the relay's port is found
 * in /proc/net/tcp (as any local process could) and curl binds it.
 */
import { createGateway } from "../../runtime/http/gateway.ts";
import type { Route } from "../../runtime/http/router.ts";
import { startServer } from "../../runtime/http/server.ts";
import { silentLogger } from "../../runtime/log.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";

const ROUTES: Route[] = [
  { method: "GET", path: "/api/test/ping", auth: "none", handler: () => new Response("pong") },
];

/** Local ports of ESTABLISHED IPv4 sockets 127.0.0.1:x → 127.0.0.1:`remotePort`. */
function relayPorts(remotePort: number): number[] {
  const out: number[] = [];
  for (const line of Deno.readTextFileSync("/proc/net/tcp").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || f[3] !== "01") continue;
    const [lip, lport] = f[1].split(":");
    const [rip, rport] = f[2].split(":");
    if (lip === "0100007F" && rip === "0100007F" && parseInt(rport, 16) === remotePort) {
      out.push(parseInt(lport, 16));
    }
  }
  return out;
}

Deno.test("a direct connection borrowing a relay's source port on another loopback address is refused", async () => {
  const home = makeTempHome();
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    routes: ROUTES,
    gateway: createGateway({ root: home, log: silentLogger }),
    log: silentLogger,
  });
  const held = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    // A keep-alive request through the guard leaves its relay open.
    await held.write(
      new TextEncoder().encode(
        `GET /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n\r\n`,
      ),
    );
    await held.read(new Uint8Array(4096));
    const ports = relayPorts(server.upstreamPort);
    assertEquals(ports.length, 1, "exactly one relay is open");
    const out = await new Deno.Command("curl", {
      args: [
        "-s",
        "--max-time",
        "3",
        "--interface",
        "127.0.0.2",
        "--local-port",
        String(ports[0]),
        "-H",
        `host: 127.0.0.1:${server.port}`,
        `http://127.0.0.1:${server.upstreamPort}/api/test/ping`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const body = new TextDecoder().decode(out.stdout);
    assert(body !== "pong", "the direct connection was served as a relay");
    assertEquals(JSON.parse(body).error.code, "connection_forbidden");
  } finally {
    held.close();
    await server.shutdown();
    await Deno.remove(home, { recursive: true });
  }
});
