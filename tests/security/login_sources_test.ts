/**
 * Attack: a local process without the token guesses logins from many
 * loopback source addresses [GW-3]. Any process may bind 127.x.y.z as its
 * source; when the limiter keyed on the exact peer address each alias got 5
 * fresh guesses (16M aliases, 1024 tracked). Now every loopback address is
 * one source (and an IPv6 peer is its /64), so the sixth wrong guess from
 * ANY loopback alias is 429 — proven against the real server with curl
 * binding distinct source addresses.
 */
import { assertEquals } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { sourceKey } from "../../runtime/http/rate_limit.ts";
import { LOGIN_FAILURES_PER_WINDOW } from "../../runtime/limits.ts";

/** POSTs a wrong-token login from `source` (bound with curl); returns the status. */
async function guessFrom(port: number, source: string): Promise<number> {
  const out = await new Deno.Command("curl", {
    args: [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "--interface",
      source,
      "-H",
      `origin: http://127.0.0.1:${port}`,
      "-H",
      "content-type: application/json",
      "--data",
      JSON.stringify({ token: "wrong-guess-0001" }),
      `http://127.0.0.1:${port}/api/login`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return Number(new TextDecoder().decode(out.stdout));
}

Deno.test("login guesses from different loopback aliases share one failure budget", async () => {
  const s = await startTestServer();
  try {
    const statuses: number[] = [];
    for (let i = 0; i < LOGIN_FAILURES_PER_WINDOW + 3; i++) {
      statuses.push(await guessFrom(s.port, `127.0.${i}.${i + 2}`));
    }
    assertEquals(statuses, [
      ...Array(LOGIN_FAILURES_PER_WINDOW).fill(401),
      429,
      429,
      429,
    ]);
  } finally {
    await s.stop();
  }
});

Deno.test("the limiter key folds loopback to one source and IPv6 to its /64", () => {
  for (
    const a of ["127.0.0.1", "127.9.9.9", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.2", "[::1]"]
  ) {
    assertEquals(sourceKey(a), "loopback", a);
  }
  assertEquals(sourceKey("192.168.1.5"), "192.168.1.5");
  assertEquals(sourceKey("::ffff:10.0.0.1"), "10.0.0.1");
  assertEquals(sourceKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assertEquals(sourceKey("2001:DB8:0001:0002::9"), "2001:db8:1:2::/64");
  assertEquals(sourceKey("fe80::1"), "fe80:0:0:0::/64");
});
