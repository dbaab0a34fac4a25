/**
 * An impostor Worker for refusal tests: it does NOT go through the production
 * confinement, yet sends a perfectly well-formed attestation frame.
 *   plain              — no confinement at all
 *   main_thread_only   — setsid, capabilities dropped, no_new_privs and the
 *                        real seccomp filter, but WITHOUT TSYNC: only the
 *                        main thread is filtered, Deno's other threads are not
 * The Control Plane must refuse both from /proc evidence alone.
 */
import { IPC_PROTOCOL_VERSION } from "../../runtime/protocol/ipc.ts";
import { addressOf, hostArch, syscall } from "../../sandbox/libc.ts";
import { dropAllCapabilities } from "../../sandbox/capabilities.ts";
import { buildWorkerFilter } from "../../sandbox/seccomp_bpf.ts";

const mode = Deno.args[0];
const pid = Number(syscall("getpid").ret);
if (mode === "main_thread_only") {
  syscall("setsid");
  if (!dropAllCapabilities().ok) Deno.exit(4);
  syscall("prctl", 38, 1, 0, 0, 0);
  const noop = () => {};
  Deno.addSignalListener("SIGUSR2", noop);
  Deno.removeSignalListener("SIGUSR2", noop);
  const prog = buildWorkerFilter({ arch: hostArch(), selfPid: pid });
  const fprog = new Uint8Array(16);
  const v = new DataView(fprog.buffer);
  v.setUint16(0, prog.length / 8, true);
  v.setBigUint64(8, addressOf(prog), true);
  if (syscall("seccomp", 1, 0, fprog).ret !== 0n) Deno.exit(5);
} else if (mode !== "plain") {
  Deno.exit(2);
}
const frame = {
  v: IPC_PROTOCOL_VERSION,
  type: "sandbox.attestation",
  pid,
  ppid: Number(syscall("getppid").ret),
  landlock_abi: 7,
  seccomp_mode: 2,
  no_new_privs: true,
  capabilities_zero: true,
};
await Deno.stdout.write(new TextEncoder().encode(JSON.stringify(frame) + "\n"));
// Wait for work that must never come (the test expects to be killed).
for await (const _ of Deno.stdin.readable) { /* drain */ }
