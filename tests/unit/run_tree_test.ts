/**
 * Run tree measurement [SB-6]: each bound is hit exactly (1,024 entries fine,
 * 1,025 over; 16 MiB logical fine, one byte more over; 32 MiB allocated), the
 * walk does not follow symlinks and stops early on a flood.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  RUN_TREE_ALLOCATED_BYTES_MAX,
  RUN_TREE_ENTRIES_MAX,
  RUN_TREE_LOGICAL_BYTES_MAX,
} from "../../runtime/limits.ts";
import { measureRunTree, runTreeOverLimit } from "../../runtime/worker/run_tree.ts";
import { cstr, O_CLOEXEC, O_CREAT, O_WRONLY, syscall } from "../../sandbox/libc.ts";

function withDir(fn: (dir: string) => Promise<void>) {
  return async () => {
    const dir = Deno.makeTempDirSync({ prefix: "ab-tree-" });
    try {
      await fn(dir);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  };
}

Deno.test(
  "1,024 entries are within the bound and the 1,025th is over",
  withDir(async (dir) => {
    Deno.mkdirSync(`${dir}/d`);
    for (let i = 1; i < RUN_TREE_ENTRIES_MAX; i++) {
      Deno.writeFileSync(`${dir}/d/f${i}`, new Uint8Array(0));
    }
    const at = await measureRunTree(dir);
    assertEquals(at.entries, RUN_TREE_ENTRIES_MAX);
    assertEquals(runTreeOverLimit(at), false);
    Deno.writeFileSync(`${dir}/one-more`, new Uint8Array(0));
    const over = await measureRunTree(dir);
    assertEquals(runTreeOverLimit(over), true);
    assertEquals(over.entries, RUN_TREE_ENTRIES_MAX + 1); // stopped right at the bound
  }),
);

Deno.test(
  "16 MiB of logical size is within the bound and one byte more is over",
  withDir(async (dir) => {
    const f = Deno.openSync(`${dir}/sparse`, { write: true, create: true });
    f.truncateSync(RUN_TREE_LOGICAL_BYTES_MAX);
    assertEquals(runTreeOverLimit(await measureRunTree(dir)), false);
    f.truncateSync(RUN_TREE_LOGICAL_BYTES_MAX + 1);
    f.close();
    assertEquals(runTreeOverLimit(await measureRunTree(dir)), true);
  }),
);

Deno.test(
  "blocks allocated beyond the end of a file count against the allocated bound",
  withDir(async (dir) => {
    const o = syscall(
      "openat",
      -100,
      cstr(`${dir}/prealloc`),
      O_WRONLY | O_CREAT | O_CLOEXEC,
      0o600,
    );
    assert(o.ret >= 0n);
    const FALLOC_FL_KEEP_SIZE = 1;
    const r = syscall(
      "fallocate",
      Number(o.ret),
      FALLOC_FL_KEEP_SIZE,
      0,
      RUN_TREE_ALLOCATED_BYTES_MAX + 4096,
    );
    syscall("close", Number(o.ret));
    assertEquals(r.ret, 0n);
    const u = await measureRunTree(dir);
    assertEquals(u.logicalBytes, 0);
    assert(u.allocatedBytes > RUN_TREE_ALLOCATED_BYTES_MAX);
    assertEquals(runTreeOverLimit(u), true);
  }),
);

Deno.test(
  "a symlink to a large file outside the Run root is not followed",
  withDir(async (dir) => {
    Deno.mkdirSync(`${dir}/run`);
    const f = Deno.openSync(`${dir}/big`, { write: true, create: true });
    f.truncateSync(RUN_TREE_LOGICAL_BYTES_MAX * 2);
    f.close();
    Deno.symlinkSync(`${dir}/big`, `${dir}/run/link`);
    Deno.symlinkSync(dir, `${dir}/run/loop`);
    const u = await measureRunTree(`${dir}/run`);
    assertEquals([u.entries, u.logicalBytes, runTreeOverLimit(u)], [2, 0, false]);
  }),
);
