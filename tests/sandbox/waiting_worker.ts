/**
 * Test entry for `WorkerPort.frameWaiting` [PF-1]: EXACTLY the production
 * confinement (`workerCommand`, PRODUCTION_STEPS), then a body that reports
 * what `frameWaiting()` says before anything was sent, waits until it says a
 * frame is there, and echoes that frame — proving the check works confined
 * (seccomp, Landlock, the sandbox uid) and consumes nothing.
 */
import { workerCommand } from "../../sandbox/worker_entry.ts";

const code = await workerCommand([...Deno.args], {
  body: async (port) => {
    // The test sends nothing before it has read this frame.
    await port.send({ v: 2, type: "probe.ready", waiting: port.frameWaiting() });
    let polls = 0;
    while (!port.frameWaiting()) {
      if (++polls > 3000) return 4; // 30 s: the test never sent
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await port.send({ v: 2, type: "probe.seen" });
    const frame = await port.receive(10_000);
    await port.send({ v: 2, type: "probe.echo", frame });
    return 0;
  },
  stage2: { module: new URL(import.meta.url), argsPrefix: [] },
});
Deno.exit(code);
