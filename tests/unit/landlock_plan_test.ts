/**
 * Landlock planning [SB-1, SB-3, PK-5]: ABI below 6 refused, every right the
 * ABI knows handled, only read rights granted, TCP handled with no rule,
 * abstract sockets and signals scoped, the Run root not executable.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  FS_EXECUTE,
  FS_READ_DIR,
  FS_READ_FILE,
  FS_WRITE_FILE,
  handledFsForAbi,
  NET_BIND_TCP,
  NET_CONNECT_TCP,
  planLandlock,
  READ_EXEC,
  READ_ONLY,
  SCOPE_ABSTRACT_UNIX_SOCKET,
  SCOPE_SIGNAL,
} from "../../sandbox/landlock.ts";

const input = {
  executable: "/opt/ab/agent-builder",
  systemRoots: ["/lib", "/etc/ld.so.cache"],
  codeRoots: ["/src/runtime"],
  runRoot: "/home/op/.runtime/agents/a/runs/r",
  ownProcMaps: "/proc/4242/maps",
};

Deno.test("planLandlock() refuses an ABI below 6 instead of degrading", () => {
  for (const abi of [0, 1, 5]) {
    const r = planLandlock({ ...input, abi });
    assertEquals(r.ok, false);
  }
});

Deno.test("planLandlock() handles every filesystem right of ABI 6+ and grants no write", () => {
  const r = planLandlock({ ...input, abi: 7 });
  assert(r.ok);
  assertEquals(r.plan.handledFs, (1 << 16) - 1);
  assertEquals(r.plan.handledNet, NET_BIND_TCP | NET_CONNECT_TCP);
  assertEquals(r.plan.scoped, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL);
  for (const rule of r.plan.rules) assertEquals(rule.access & FS_WRITE_FILE, 0, rule.path);
  for (const rule of r.plan.rules) assertEquals(rule.access & ~READ_EXEC, 0, rule.path);
});

Deno.test("planLandlock() makes the Run root readable but not executable", () => {
  const r = planLandlock({ ...input, abi: 6 });
  assert(r.ok);
  const run = r.plan.rules.find((x) => x.path === input.runRoot);
  assertEquals(run?.access, READ_ONLY);
  assertEquals(READ_ONLY & FS_EXECUTE, 0);
  assertEquals(READ_ONLY, FS_READ_FILE | FS_READ_DIR);
});

Deno.test("planLandlock() grants only the Worker's own /proc/<pid>/maps, read-only", () => {
  const r = planLandlock({ ...input, abi: 7 });
  assert(r.ok);
  assertEquals(r.plan.rules.find((x) => x.path === "/proc/4242/maps")?.access, FS_READ_FILE);
  for (const bad of ["/proc/4242", "/proc/self/maps", "/proc/1/../maps", "/proc/0/maps"]) {
    assertEquals(planLandlock({ ...input, abi: 7, ownProcMaps: bad }).ok, false, bad);
  }
});

Deno.test("planLandlock() refuses relative roots and the filesystem root", () => {
  assertEquals(planLandlock({ ...input, abi: 7, runRoot: "runs/r" }).ok, false);
  assertEquals(planLandlock({ ...input, abi: 7, codeRoots: ["/"] }).ok, false);
});

Deno.test("handledFsForAbi() adds REFER, TRUNCATE and IOCTL_DEV by ABI", () => {
  assertEquals(handledFsForAbi(1), (1 << 13) - 1);
  assertEquals(handledFsForAbi(2), (1 << 14) - 1);
  assertEquals(handledFsForAbi(4), (1 << 15) - 1);
  assertEquals(handledFsForAbi(5), (1 << 16) - 1);
});
