/**
 * Attack tests for file/stat and file/read_text [TL-4]: every hostile path or
 * object must be refused with its fixed code, and nothing may block.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileReadText } from "../../runtime/tools/file_read_text.ts";
import { fileStat } from "../../runtime/tools/file_stat.ts";
import { fileGrep } from "../../runtime/tools/file_grep.ts";
import { steppingClock, withWorkspace } from "./workspace_fixture.ts";

function code(r: { ok: boolean; code?: string }): string {
  return r.ok ? "ok" : r.code!;
}

Deno.test("read_text refuses a symlink at the leaf", () => {
  withWorkspace((ws) => {
    ws.file("real.txt", "hi\n");
    Deno.symlinkSync("real.txt", `${ws.dir}/link.txt`);
    assertEquals(code(fileReadText(ws.root, { path: "link.txt" })), "path_symlink");
    assertEquals(code(fileStat(ws.root, { path: "link.txt" })), "path_symlink");
  });
});

Deno.test("read_text refuses a symlink at every intermediate component", () => {
  withWorkspace((ws) => {
    ws.file("a/b/c/d/f.txt", "deep\n");
    assertEquals(code(fileReadText(ws.root, { path: "a/b/c/d/f.txt" })), "ok");
    const parts = ["a", "b", "c", "d"];
    for (let i = 0; i < parts.length; i++) {
      withWorkspace((w2) => {
        w2.file("a/b/c/d/f.txt", "deep\n");
        const prefix = parts.slice(0, i + 1).join("/");
        // Move the real directory aside and put a symlink to it in its place.
        Deno.renameSync(`${w2.dir}/${prefix}`, `${w2.dir}/${prefix}.real`);
        Deno.symlinkSync(`${w2.dir}/${prefix}.real`, `${w2.dir}/${prefix}`);
        assertEquals(
          code(fileReadText(w2.root, { path: "a/b/c/d/f.txt" })),
          "path_symlink",
          `symlink at ${prefix}`,
        );
      });
    }
  });
});

Deno.test("read_text refuses dot-dot, absolute, backslash and empty components", () => {
  withWorkspace((ws) => {
    ws.file("x.txt", "x\n");
    for (
      const p of [
        "../x.txt",
        "a/../x.txt",
        "/etc/passwd",
        "./x.txt",
        "a//x.txt",
        "x.txt/",
        "a\\x.txt",
        "",
      ]
    ) {
      assertEquals(code(fileReadText(ws.root, { path: p })), "path_invalid", p);
    }
  });
});

Deno.test("read_text refuses more than 32 components and more than 1024 bytes", () => {
  withWorkspace((ws) => {
    const deep = Array.from({ length: 33 }, () => "d").join("/");
    assertEquals(code(fileReadText(ws.root, { path: deep })), "path_too_long");
    assertEquals(code(fileReadText(ws.root, { path: "a".repeat(1025) })), "path_too_long");
    // 32 components of a real tree are accepted.
    const ok = Array.from({ length: 31 }, () => "d").join("/") + "/f.txt";
    ws.file(ok, "leaf\n");
    assertEquals(code(fileReadText(ws.root, { path: ok })), "ok");
  });
});

Deno.test("read_text refuses /proc/self/root style magic links, absolute or linked", () => {
  withWorkspace((ws) => {
    Deno.symlinkSync("/proc/self/root", `${ws.dir}/proc_root`);
    assertEquals(code(fileReadText(ws.root, { path: "proc_root/etc/passwd" })), "path_symlink");
    Deno.symlinkSync("/proc/self/fd/0", `${ws.dir}/fd0`);
    assertEquals(code(fileReadText(ws.root, { path: "fd0" })), "path_symlink");
    assertEquals(
      code(fileReadText(ws.root, { path: "/proc/self/root/etc/passwd" })),
      "path_invalid",
    );
  });
});

Deno.test("read_text refuses a hardlinked file", () => {
  withWorkspace((ws) => {
    ws.file("one.txt", "shared\n");
    Deno.linkSync(`${ws.dir}/one.txt`, `${ws.dir}/two.txt`);
    assertEquals(code(fileReadText(ws.root, { path: "one.txt" })), "file_hardlinked");
    assertEquals(code(fileStat(ws.root, { path: "two.txt" })), "file_hardlinked");
  });
});

Deno.test("read_text refuses a FIFO without blocking", () => {
  withWorkspace((ws) => {
    new Deno.Command("mkfifo", { args: ["-m", "600", `${ws.dir}/pipe`] }).outputSync();
    const t0 = performance.now();
    assertEquals(code(fileReadText(ws.root, { path: "pipe" })), "file_not_regular");
    assertEquals(code(fileStat(ws.root, { path: "pipe" })), "file_not_regular");
    assert(performance.now() - t0 < 3000, "FIFO refusal must not block");
  });
});

Deno.test("read_text refuses a unix socket", () => {
  withWorkspace((ws) => {
    const l = Deno.listen({ transport: "unix", path: `${ws.dir}/sock` });
    try {
      assertEquals(code(fileReadText(ws.root, { path: "sock" })), "file_not_regular");
    } finally {
      l.close();
    }
  });
});

Deno.test("read_text refuses a character device", () => {
  withWorkspace((ws) => {
    const r = new Deno.Command("mknod", { args: ["-m", "600", `${ws.dir}/null`, "c", "1", "3"] })
      .outputSync();
    assert(r.success, "mknod needs root");
    assertEquals(code(fileReadText(ws.root, { path: "null" })), "file_not_regular");
  });
});

Deno.test("read_text refuses a sparse file", () => {
  withWorkspace((ws) => {
    const p = ws.file("sparse.txt", "head\n");
    Deno.truncateSync(p, 256 * 1024);
    assertEquals(code(fileReadText(ws.root, { path: "sparse.txt" })), "file_sparse");
  });
});

Deno.test("read_text refuses group/world-writable files and directories", () => {
  withWorkspace((ws) => {
    const f = ws.file("gw.txt", "x\n");
    Deno.chmodSync(f, 0o620);
    assertEquals(code(fileReadText(ws.root, { path: "gw.txt" })), "path_unsafe_owner");
    Deno.chmodSync(f, 0o602);
    assertEquals(code(fileReadText(ws.root, { path: "gw.txt" })), "path_unsafe_owner");
    ws.file("dir/in.txt", "x\n");
    Deno.chmodSync(`${ws.dir}/dir`, 0o770);
    assertEquals(code(fileReadText(ws.root, { path: "dir/in.txt" })), "path_unsafe_owner");
    Deno.chmodSync(`${ws.dir}/dir`, 0o707);
    assertEquals(code(fileReadText(ws.root, { path: "dir/in.txt" })), "path_unsafe_owner");
  });
});

Deno.test("read_text refuses a file or directory owned by another uid", () => {
  withWorkspace((ws) => {
    const f = ws.file("foreign.txt", "x\n");
    Deno.chownSync(f, 4242, 4242);
    assertEquals(code(fileReadText(ws.root, { path: "foreign.txt" })), "path_unsafe_owner");
    ws.file("fdir/in.txt", "x\n");
    Deno.chownSync(`${ws.dir}/fdir`, 4242, 4242);
    assertEquals(code(fileReadText(ws.root, { path: "fdir/in.txt" })), "path_unsafe_owner");
  });
});

Deno.test("read_text refuses NUL, control bytes and invalid UTF-8", () => {
  withWorkspace((ws) => {
    ws.file("nul.txt", new Uint8Array([0x61, 0x00, 0x62]));
    ws.file("esc.txt", "colour \x1b[31mred\n");
    ws.file("c1.txt", "c1 \u0085 here\n");
    ws.file("bad.txt", new Uint8Array([0x61, 0xff, 0x62]));
    ws.file("overlong.txt", new Uint8Array([0xc0, 0xaf]));
    ws.file("surrogate.txt", new Uint8Array([0xed, 0xa0, 0x80]));
    assertEquals(code(fileReadText(ws.root, { path: "nul.txt" })), "file_binary");
    assertEquals(code(fileReadText(ws.root, { path: "esc.txt" })), "file_binary");
    assertEquals(code(fileReadText(ws.root, { path: "c1.txt" })), "file_binary");
    assertEquals(code(fileReadText(ws.root, { path: "bad.txt" })), "file_invalid_utf8");
    assertEquals(code(fileReadText(ws.root, { path: "overlong.txt" })), "file_invalid_utf8");
    assertEquals(code(fileReadText(ws.root, { path: "surrogate.txt" })), "file_invalid_utf8");
  });
});

Deno.test("read_text refuses a file that grows between open and read", () => {
  withWorkspace((ws) => {
    const p = ws.file("grow.txt", "start\n");
    const r = fileReadText(ws.root, { path: "grow.txt" }, {
      hooks: { afterOpen: () => Deno.writeTextFileSync(p, "more\n", { append: true }) },
    });
    assertEquals(code(r), "file_changed");
  });
});

Deno.test("read_text refuses a file replaced by rename during the read", () => {
  withWorkspace((ws) => {
    ws.file("target.txt", "original\n");
    const other = ws.file("other.txt", "swapped\n");
    const r = fileReadText(ws.root, { path: "target.txt" }, {
      hooks: { afterRead: () => Deno.renameSync(other, `${ws.dir}/target.txt`) },
    });
    assertEquals(code(r), "file_changed");
  });
});

Deno.test("read_text refuses a file rewritten in place during the read", () => {
  withWorkspace((ws) => {
    const p = ws.file("inplace.txt", "aaaa\n");
    const r = fileReadText(ws.root, { path: "inplace.txt" }, {
      hooks: {
        afterRead: () => {
          const f = Deno.openSync(p, { write: true });
          f.writeSync(new TextEncoder().encode("bbbb"));
          f.close();
        },
      },
    });
    assertEquals(code(r), "file_changed");
  });
});

Deno.test("read_text fails closed when the 0.5 s deadline passes", () => {
  withWorkspace((ws) => {
    ws.file("slow.txt", "x\n");
    const r = fileReadText(ws.root, { path: "slow.txt" }, { hooks: { now: steppingClock(200) } });
    assertEquals(code(r), "file_timeout");
  });
});

Deno.test("read_text refuses a file over 1 MiB and accepts exactly 1 MiB", () => {
  withWorkspace((ws) => {
    ws.file("big.txt", "a".repeat(1024 * 1024 + 1));
    ws.file("max.txt", "a".repeat(1024 * 1024));
    assertEquals(code(fileReadText(ws.root, { path: "big.txt" })), "file_too_large");
    assertEquals(code(fileReadText(ws.root, { path: "max.txt" })), "ok");
  });
});

Deno.test("read_text refuses a directory and a missing file with fixed codes", () => {
  withWorkspace((ws) => {
    ws.mkdir("d");
    assertEquals(code(fileReadText(ws.root, { path: "d" })), "file_not_regular");
    assertEquals(code(fileReadText(ws.root, { path: "missing.txt" })), "path_not_found");
    ws.file("plain", "x\n");
    assertEquals(code(fileReadText(ws.root, { path: "plain/child" })), "path_not_directory");
  });
});

Deno.test("read_text refuses a FIFO swapped in after the type check, without blocking", () => {
  withWorkspace((ws) => {
    const p = ws.file("swap.txt", "regular\n");
    const t0 = performance.now();
    const r = fileReadText(ws.root, { path: "swap.txt" }, {
      hooks: {
        afterTypeCheck: () => {
          Deno.renameSync(p, `${p}.aside`); // keep the inode so it is not reused
          new Deno.Command("mkfifo", { args: ["-m", "600", p] }).outputSync();
        },
      },
    });
    assertEquals(code(r), "file_changed");
    assert(performance.now() - t0 < 3000, "the swapped-in FIFO must not block");
  });
});

Deno.test("read_text refuses a FIFO that reuses the checked file's inode number", () => {
  withWorkspace((ws) => {
    const p = ws.file("reuse.txt", "regular\n");
    const r = fileReadText(ws.root, { path: "reuse.txt" }, {
      hooks: {
        afterTypeCheck: () => {
          Deno.removeSync(p);
          new Deno.Command("mkfifo", { args: ["-m", "600", p] }).outputSync();
        },
      },
    });
    // Same inode number or not, the reopened object is re-checked and refused.
    assert(!r.ok && (r.code === "file_not_regular" || r.code === "file_changed"));
  });
});

Deno.test("a hole hidden behind preallocated blocks is still refused as sparse, by read_text and grep", () => {
  withWorkspace((ws) => {
    // Allocated blocks ≥ size, so only lseek(SEEK_HOLE) can see the hole.
    const p = ws.file("prealloc.txt", "hello\n");
    const r = new Deno.Command("sh", {
      args: ["-c", 'fallocate -n -o 0 -l 1048576 "$1" && truncate -s 65536 "$1"', "sh", p],
    }).outputSync();
    assert(r.success, new TextDecoder().decode(r.stderr));
    const st = Deno.statSync(p);
    assert((st.blocks ?? 0) * 512 >= st.size, "the block count alone must not reveal the hole");
    assertEquals(code(fileReadText(ws.root, { path: "prealloc.txt" })), "file_sparse");
    assertEquals(
      code(fileGrep(ws.root, { pattern: "hello", path: "prealloc.txt" })),
      "file_sparse",
    );
    const all = fileGrep(ws.root, { pattern: "hello" });
    assert(all.ok);
    assertEquals([all.matches.length, all.refused], [0, 1]);
  });
});
