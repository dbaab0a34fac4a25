/**
 * The event-loop bench's probe, in its own process [PF-2]: requests
 * `/health` back to back until its stdin closes, then prints every latency
 * (ms, one JSON array) on stdout. A probe inside the bench process would also
 * time the bench's own event loop (the scripted model's streams, four SSE
 * readers); alone, the only loop a request can wait on is the server's.
 * It prints `ready` once its first request was answered.
 *
 * Run: deno run --allow-net=127.0.0.1 tools/bench/health_probe.ts <server-url>
 */
const url = Deno.args[0];
if (!url?.startsWith("http://127.0.0.1:")) {
  throw new Error("usage: health_probe.ts http://127.0.0.1:PORT");
}

let done = false;
const stdinClosed = (async () => {
  const buf = new Uint8Array(64);
  while ((await Deno.stdin.read(buf)) !== null) { /* wait for EOF */ }
  done = true;
})();

const latencies: number[] = [];
await (await fetch(`${url}/health`)).body?.cancel();
console.log("ready");
while (!done) {
  const t0 = performance.now();
  const res = await fetch(`${url}/health`);
  await res.body?.cancel();
  latencies.push(performance.now() - t0);
}
await stdinClosed;
console.log(JSON.stringify(latencies));
