/** file/edit and file/write [TL-6]: receipts, exact-once edits, bound plans, atomic commit. */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileReadText, type ReadReceipt } from "../../runtime/tools/file_read_text.ts";
import { prepareEdit } from "../../runtime/tools/file_edit.ts";
import { prepareWrite } from "../../runtime/tools/file_write.ts";
import { commitMutation } from "../../runtime/tools/mutation_commit.ts";
import {
  lineDiff,
  type MutationPlan,
  newContentDigest,
  planDigest,
  PREVIEW_TRUNCATED_MARKER,
} from "../../runtime/tools/mutation_plan.ts";
import { steppingClock, type TempWorkspace, withWorkspace } from "./workspace_fixture.ts";

const binding = { agent_id: "agent-1", generation: 3, run_id: "run-1", call_id: "call-1" };
const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);

function receipt(ws: TempWorkspace, path: string): ReadReceipt {
  const r = fileReadText(ws.root, { path });
  if (!r.ok) throw new Error(r.code);
  return r.receipt;
}

Deno.test("edit replaces the one exact match after approval, with an exact diff", () => {
  withWorkspace((ws) => {
    const p = ws.file("src/a.txt", "one\ntwo\nthree\n");
    const plan = prepareEdit(ws.root, { path: "src/a.txt", old_text: "two", new_text: "2" }, {
      receipt: receipt(ws, "src/a.txt"),
      binding,
    });
    assert(plan.ok);
    assertEquals(
      plan.diff,
      "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n",
    );
    assertEquals(plan.preview, plan.diff);
    // Nothing is written before the commit.
    assertEquals(Deno.readTextFileSync(p), "one\ntwo\nthree\n");
    const c = commitMutation(ws.root, plan.plan, { binding });
    assert(c.ok);
    assertEquals(c.outcome, "replaced");
    assertEquals(Deno.readTextFileSync(p), "one\n2\nthree\n");
    assertEquals((Deno.statSync(p).mode ?? 0) & 0o777, 0o600);
    const again = receipt(ws, "src/a.txt");
    assertEquals(again.content_digest, c.content_digest);
    assertEquals([...Deno.readDirSync(`${ws.dir}/src`)].length, 1);
  });
});

Deno.test("edit refuses old text that matches twice, overlapping, or not at all", () => {
  withWorkspace((ws) => {
    ws.file("d.txt", "x = 1\nx = 1\naaa\n");
    const rc = receipt(ws, "d.txt");
    const ctx = { receipt: rc, binding };
    assertEquals(
      code(prepareEdit(ws.root, { path: "d.txt", old_text: "x = 1", new_text: "y" }, ctx)),
      "edit_ambiguous",
    );
    assertEquals(
      code(prepareEdit(ws.root, { path: "d.txt", old_text: "aa", new_text: "b" }, ctx)),
      "edit_ambiguous",
    );
    assertEquals(
      code(prepareEdit(ws.root, { path: "d.txt", old_text: "zzz", new_text: "b" }, ctx)),
      "edit_no_match",
    );
    assertEquals(
      code(prepareEdit(ws.root, { path: "d.txt", old_text: "", new_text: "b" }, ctx)),
      "tool_invalid_arguments",
    );
  });
});

Deno.test("edit and write of an existing file need a receipt, and a stale one is refused", () => {
  withWorkspace((ws) => {
    const p = ws.file("r.txt", "v1\n");
    const args = { path: "r.txt", old_text: "v1", new_text: "v2" };
    assertEquals(code(prepareEdit(ws.root, args, { receipt: null, binding })), "receipt_required");
    assertEquals(
      code(prepareWrite(ws.root, { path: "r.txt", content: "new\n" }, { receipt: null, binding })),
      "receipt_required",
    );
    const rc = receipt(ws, "r.txt");
    const other = ws.file("o.txt", "v1\n");
    assertEquals(
      code(prepareEdit(ws.root, args, { receipt: receipt(ws, "o.txt"), binding })),
      "receipt_required",
    );
    Deno.removeSync(other);
    Deno.writeTextFileSync(p, "v1 changed\n");
    assertEquals(code(prepareEdit(ws.root, args, { receipt: rc, binding })), "receipt_stale");
    assertEquals(
      code(prepareWrite(ws.root, { path: "r.txt", content: "x\n" }, { receipt: rc, binding })),
      "receipt_stale",
    );
  });
});

Deno.test("a plan whose file changed after approval is refused at commit", () => {
  withWorkspace((ws) => {
    const p = ws.file("c.txt", "alpha\n");
    const plan = prepareEdit(ws.root, { path: "c.txt", old_text: "alpha", new_text: "beta" }, {
      receipt: receipt(ws, "c.txt"),
      binding,
    });
    assert(plan.ok);
    Deno.writeTextFileSync(p, "alpha!\n");
    assertEquals(code(commitMutation(ws.root, plan.plan, { binding })), "file_changed");
    assertEquals(Deno.readTextFileSync(p), "alpha!\n");
  });
});

Deno.test("a plan is bound to generation, run and call, and cannot be tampered with", () => {
  withWorkspace((ws) => {
    ws.file("b.txt", "old\n");
    const plan = prepareWrite(ws.root, { path: "b.txt", content: "new\n" }, {
      receipt: receipt(ws, "b.txt"),
      binding,
    });
    assert(plan.ok);
    assertEquals(
      code(commitMutation(ws.root, plan.plan, { binding: { ...binding, generation: 4 } })),
      "approval_stale",
    );
    assertEquals(
      code(commitMutation(ws.root, plan.plan, { binding: { ...binding, run_id: "run-2" } })),
      "approval_stale",
    );
    assertEquals(
      code(commitMutation(ws.root, { ...plan.plan, content: "evil\n" }, { binding })),
      "approval_stale",
    );
    assertEquals(
      code(commitMutation(ws.root, { ...plan.plan, path: "other.txt" }, { binding })),
      "approval_stale",
    );
    assertEquals(
      code(commitMutation(ws.root, { ...plan.plan, extra: 1 }, { binding })),
      "approval_stale",
    );
    assertEquals(Deno.readTextFileSync(`${ws.dir}/b.txt`), "old\n");
    assertEquals(code(commitMutation(ws.root, plan.plan, { binding })), "ok");
  });
});

Deno.test("write creates with no-replace and never clobbers a file that appeared meanwhile", () => {
  withWorkspace((ws) => {
    ws.mkdir("d");
    const plan = prepareWrite(ws.root, { path: "d/new.txt", content: "mine\n" }, {
      receipt: null,
      binding,
    });
    assert(plan.ok);
    assertEquals(plan.plan.kind, "create");
    const c = commitMutation(ws.root, plan.plan, {
      binding,
      hooks: { beforeSwap: () => Deno.writeTextFileSync(`${ws.dir}/d/new.txt`, "theirs\n") },
    });
    assertEquals(code(c), "file_exists");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/d/new.txt`), "theirs\n");
    assertEquals([...Deno.readDirSync(`${ws.dir}/d`)].map((e) => e.name), ["new.txt"]);
    const fresh = prepareWrite(ws.root, { path: "d/fresh.txt", content: "ok\n" }, {
      receipt: null,
      binding,
    });
    assert(fresh.ok);
    const ok = commitMutation(ws.root, fresh.plan, { binding });
    assert(ok.ok);
    assertEquals(ok.outcome, "created");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/d/fresh.txt`), "ok\n");
  });
});

Deno.test("replace undoes the exchange when another writer changed the target in place", () => {
  withWorkspace((ws) => {
    const p = ws.file("t.txt", "base\n");
    const plan = prepareWrite(ws.root, { path: "t.txt", content: "ours\n" }, {
      receipt: receipt(ws, "t.txt"),
      binding,
    });
    assert(plan.ok);
    let tempMode = -1;
    const c = commitMutation(ws.root, plan.plan, {
      binding,
      hooks: {
        beforeSwap: () => {
          const tmp = [...Deno.readDirSync(ws.dir)].find((e) =>
            e.name.startsWith(".agent-builder-write-")
          );
          tempMode = (Deno.statSync(`${ws.dir}/${tmp!.name}`).mode ?? 0) & 0o777;
          const f = Deno.openSync(p, { write: true });
          f.writeSync(new TextEncoder().encode("BASE"));
          f.close();
        },
      },
    });
    assertEquals(tempMode, 0o600);
    assertEquals(code(c), "file_changed");
    assertEquals(Deno.readTextFileSync(p), "BASE\n");
    assertEquals([...Deno.readDirSync(ws.dir)].map((e) => e.name), ["t.txt"]);
  });
});

Deno.test("replace undoes the exchange when another writer renamed a new file over the target", () => {
  withWorkspace((ws) => {
    const p = ws.file("t.txt", "base\n");
    const plan = prepareWrite(ws.root, { path: "t.txt", content: "ours\n" }, {
      receipt: receipt(ws, "t.txt"),
      binding,
    });
    assert(plan.ok);
    const c = commitMutation(ws.root, plan.plan, {
      binding,
      hooks: {
        beforeSwap: () => {
          Deno.writeTextFileSync(`${ws.dir}/theirs`, "theirs\n", { mode: 0o600 });
          Deno.renameSync(`${ws.dir}/theirs`, p);
        },
      },
    });
    assertEquals(code(c), "file_changed");
    assertEquals(Deno.readTextFileSync(p), "theirs\n");
    assertEquals([...Deno.readDirSync(ws.dir)].map((e) => e.name), ["t.txt"]);
  });
});

Deno.test("mutation bounds: 8 KiB content, 4 KiB fragments, 4 KiB preview", () => {
  withWorkspace((ws) => {
    assertEquals(
      code(
        prepareWrite(ws.root, { path: "big.txt", content: "a".repeat(8193) }, {
          receipt: null,
          binding,
        }),
      ),
      "content_too_large",
    );
    const max = prepareWrite(ws.root, { path: "big.txt", content: "a\n".repeat(4096) }, {
      receipt: null,
      binding,
    });
    assert(max.ok);
    assert(new TextEncoder().encode(max.preview).length <= 4096);
    assert(max.preview.endsWith(PREVIEW_TRUNCATED_MARKER));
    ws.file("e.txt", "target\n");
    const rc = receipt(ws, "e.txt");
    assertEquals(
      code(
        prepareEdit(ws.root, { path: "e.txt", old_text: "t".repeat(4097), new_text: "" }, {
          receipt: rc,
          binding,
        }),
      ),
      "content_too_large",
    );
    assertEquals(
      code(
        prepareEdit(ws.root, { path: "e.txt", old_text: "target", new_text: "n".repeat(4097) }, {
          receipt: rc,
          binding,
        }),
      ),
      "content_too_large",
    );
  });
});

Deno.test("mutations refuse the reserved temp namespace, control text and unsafe paths", () => {
  withWorkspace((ws) => {
    const ctx = { receipt: null, binding };
    assertEquals(
      code(prepareWrite(ws.root, { path: ".agent-builder-write-x", content: "x" }, ctx)),
      "path_invalid",
    );
    assertEquals(
      code(prepareWrite(ws.root, { path: "../escape.txt", content: "x" }, ctx)),
      "path_invalid",
    );
    assertEquals(
      code(prepareWrite(ws.root, { path: "nul.txt", content: "a\u0000b" }, ctx)),
      "file_binary",
    );
    ws.mkdir("real");
    Deno.symlinkSync(`${ws.dir}/real`, `${ws.dir}/link`);
    assertEquals(
      code(prepareWrite(ws.root, { path: "link/x.txt", content: "x" }, ctx)),
      "path_symlink",
    );
    assertEquals(
      code(prepareWrite(ws.root, { path: "missing/x.txt", content: "x" }, ctx)),
      "path_not_found",
    );
    assertEquals(
      code(prepareEdit(ws.root, { path: "absent.txt", old_text: "a", new_text: "b" }, ctx)),
      "path_not_found",
    );
  });
});

Deno.test("a commit waits for another writer's directory lock and gives up at its deadline", () => {
  withWorkspace((ws) => {
    ws.file("l.txt", "before\n");
    const plan = prepareWrite(ws.root, { path: "l.txt", content: "after\n" }, {
      receipt: receipt(ws, "l.txt"),
      binding,
    });
    assert(plan.ok);
    const other = Deno.openSync(ws.dir, { read: true });
    try {
      other.lockSync(true); // another writer holds the parent directory
      const c = commitMutation(ws.root, plan.plan, { binding, hooks: { now: steppingClock(100) } });
      assertEquals(code(c), "file_timeout");
      assertEquals(Deno.readTextFileSync(`${ws.dir}/l.txt`), "before\n");
    } finally {
      other.close();
    }
    assertEquals(code(commitMutation(ws.root, plan.plan, { binding })), "ok");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/l.txt`), "after\n");
  });
});

Deno.test("commit re-checks a plan's path and sizes even when its digest was recomputed", () => {
  withWorkspace((ws) => {
    const made = prepareWrite(ws.root, { path: "ok.txt", content: "x\n" }, {
      receipt: null,
      binding,
    });
    assert(made.ok);
    // A plan rewritten by whoever can reach the persisted approval: the digest
    // is not a MAC, so commit must not trust what prepare already checked.
    const forge = (over: Partial<MutationPlan>) => {
      const { plan_digest: _d, ...rest } = { ...made.plan, ...over };
      return { ...rest, plan_digest: planDigest(rest) };
    };
    const reserved = forge({ path: ".agent-builder-write-planted" });
    assertEquals(code(commitMutation(ws.root, reserved, { binding })), "path_invalid");
    assertEquals(
      code(commitMutation(ws.root, forge({ path: "a//b" }), { binding })),
      "path_invalid",
    );
    const big = "b".repeat(8193);
    const huge = forge({ content: big, new_digest: newContentDigest(big) });
    assertEquals(code(commitMutation(ws.root, huge, { binding })), "content_too_large");
    const ctl = "a\u0000b";
    const bin = forge({ content: ctl, new_digest: newContentDigest(ctl) });
    assertEquals(code(commitMutation(ws.root, bin, { binding })), "file_binary");
    // Content and its digest swapped consistently: the approved diff no longer describes it.
    const other = "other\n";
    const swapped = forge({ content: other, new_digest: newContentDigest(other) });
    assertEquals(code(commitMutation(ws.root, swapped, { binding })), "approval_stale");
    assertEquals([...Deno.readDirSync(ws.dir)].length, 0);
    assertEquals(code(commitMutation(ws.root, made.plan, { binding })), "ok");
  });
});

Deno.test("mutation bounds at exactly the limit pass: 4 KiB fragments and a 4 KiB diff shown whole", () => {
  withWorkspace((ws) => {
    const frag = "f".repeat(4096);
    ws.file("frag.txt", `${frag}\n`);
    const ok = prepareEdit(ws.root, {
      path: "frag.txt",
      old_text: frag,
      new_text: "g".repeat(4096),
    }, {
      receipt: receipt(ws, "frag.txt"),
      binding,
    });
    assert(ok.ok);
    // A create diff of exactly 4096 bytes is the preview; one byte more is cut with the marker.
    // The create diff of n ASCII bytes (no final newline) is n bytes plus a fixed overhead.
    const overhead = lineDiff("p.txt", null, "x").length - 1;
    const exact = "x".repeat(4096 - overhead);
    const whole = prepareWrite(ws.root, { path: "p.txt", content: exact }, {
      receipt: null,
      binding,
    });
    assert(whole.ok);
    assertEquals(new TextEncoder().encode(whole.diff).length, 4096);
    assertEquals(whole.preview, whole.diff);
    const over = prepareWrite(ws.root, { path: "p.txt", content: exact + "x" }, {
      receipt: null,
      binding,
    });
    assert(over.ok);
    assert(new TextEncoder().encode(over.preview).length <= 4096);
    assert(over.preview.endsWith(PREVIEW_TRUNCATED_MARKER));
  });
});

Deno.test("a target that became a hardlink, symlink or FIFO after its read is refused at plan and commit", () => {
  withWorkspace((ws) => {
    const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
    try {
      const swaps: [string, (p: string) => void][] = [
        ["file_hardlinked", (p) => Deno.linkSync(p, `${ws.dir}/second`)],
        ["path_symlink", (p) => {
          Deno.removeSync(p);
          Deno.writeTextFileSync(`${outside}/victim`, "v1\n");
          Deno.symlinkSync(`${outside}/victim`, p);
        }],
        ["file_not_regular", (p) => {
          Deno.removeSync(p);
          new Deno.Command("mkfifo", { args: ["-m", "600", p] }).outputSync();
        }],
      ];
      for (const [want, swap] of swaps) {
        for (const stage of ["plan", "commit"]) {
          for (const n of [...Deno.readDirSync(ws.dir)]) Deno.removeSync(`${ws.dir}/${n.name}`);
          const p = ws.file("t.txt", "v1\n");
          const rc = receipt(ws, "t.txt");
          const args = { path: "t.txt", old_text: "v1", new_text: "v2" };
          if (stage === "plan") {
            swap(p);
            assertEquals(code(prepareEdit(ws.root, args, { receipt: rc, binding })), want, want);
          } else {
            const plan = prepareEdit(ws.root, args, { receipt: rc, binding });
            assert(plan.ok);
            swap(p);
            const c = commitMutation(ws.root, plan.plan, { binding });
            assertEquals(code(c), want, `commit ${want}`);
          }
          const left = [...Deno.readDirSync(ws.dir)].map((e) => e.name);
          assert(!left.some((n) => n.startsWith(".agent-builder-write-")), "no temp left");
        }
      }
      assertEquals(Deno.readTextFileSync(`${outside}/victim`), "v1\n");
    } finally {
      Deno.removeSync(outside, { recursive: true });
    }
  });
});
