/**
 * The raw /proc readers (sandbox/procfs.ts) that attestation and the
 * RLIMIT_NPROC task count rely on: they reuse one read buffer and parse entry
 * names without strings [PF-1], and must give exactly what the plain reading
 * gives.
 */
import { assertEquals, assertThrows } from "../helpers/assert.ts";
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";

Deno.test("listNumericEntries lists exactly the all-digit names of a directory", () => {
  const dir = Deno.makeTempDirSync({ prefix: "ab-procfs-" });
  try {
    for (const name of ["12", "007", "1a", "a1", "x", "3", "4294967295", "12.5", "-1", " 9"]) {
      Deno.writeTextFileSync(`${dir}/${name}`, "");
    }
    Deno.mkdirSync(`${dir}/815`);
    assertEquals(listNumericEntries(dir).sort((a, b) => a - b), [3, 7, 12, 815, 4294967295]);
    assertEquals(listNumericEntries(`${dir}/missing`), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("readProcText returns each file whole through its one reused buffer", () => {
  const status = readProcText("/proc/self/status") ?? "";
  const limits = readProcText("/proc/self/limits") ?? "";
  // A shorter file read after a longer one carries nothing of the longer one.
  assertEquals(readProcText("/proc/self/comm"), Deno.readTextFileSync("/proc/self/comm"));
  assertEquals(status.startsWith("Name:"), true);
  assertEquals(limits, Deno.readTextFileSync("/proc/self/limits"));
  assertEquals(readProcText("/proc/self/status")?.split("\n")[0], status.split("\n")[0]);
  assertEquals(readProcText("/proc/999999999/status"), null);
  assertThrows(() => readProcText("/etc/passwd"));
});
