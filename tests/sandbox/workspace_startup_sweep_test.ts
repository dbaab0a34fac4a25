/** The startup sweep of stale write temps across Agent workspaces [TL-6]. */
import { assertEquals } from "../helpers/assert.ts";
import type { LogFields, Logger } from "../../runtime/log.ts";
import { sweepStaleWriteTemps, workspaceDirOf } from "../../runtime/workspace/startup_cleanup.ts";

function recorder(): Logger & { lines: [string, LogFields | undefined][] } {
  const lines: [string, LogFields | undefined][] = [];
  return {
    lines,
    info: (e, f) => lines.push([e, f]),
    warn: (e, f) => lines.push([e, f]),
    error: (e, f) => lines.push([e, f]),
    flush() {},
    close() {},
  };
}

const A = "11111111-1111-4111-8111-111111111111";
const B = "22222222-2222-4222-8222-222222222222";
const C = "33333333-3333-4333-8333-333333333333";

Deno.test("the startup sweep removes stale temps per workspace and logs refusals without forcing", () => {
  const home = Deno.makeTempDirSync({ prefix: "ab-sweep-" });
  try {
    Deno.chmodSync(home, 0o700);
    for (const id of [A, B]) {
      Deno.mkdirSync(workspaceDirOf(home, id), { recursive: true, mode: 0o700 });
    }
    for (let i = 0; i < 3; i++) {
      Deno.writeTextFileSync(`${workspaceDirOf(home, A)}/.agent-builder-write-${i}`, "x", {
        mode: 0o600,
      });
    }
    Deno.writeTextFileSync(`${workspaceDirOf(home, A)}/keep.md`, "keep", { mode: 0o600 });
    Deno.symlinkSync("/etc/passwd", `${workspaceDirOf(home, B)}/.agent-builder-write-evil`);
    const log = recorder();
    const s = sweepStaleWriteTemps(home, [A, B, C], log);
    assertEquals(s, { workspaces: 2, removed: 3, refused: 1 });
    assertEquals([...Deno.readDirSync(workspaceDirOf(home, A))].map((e) => e.name), ["keep.md"]);
    assertEquals(
      Deno.lstatSync(`${workspaceDirOf(home, B)}/.agent-builder-write-evil`).isSymlink,
      true,
    );
    assertEquals(log.lines, [
      ["workspace.temp_sweep", { agent_id: A, removed: 3, remaining: 0 }],
      ["workspace.temp_sweep_refused", { agent_id: B, code: "path_symlink" }],
    ]);
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});
