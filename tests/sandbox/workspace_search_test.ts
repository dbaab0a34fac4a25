/** file/glob and file/grep [TL-5]: every cap is hit, floods fail closed, nothing is followed. */
import { assert, assertEquals } from "../helpers/assert.ts";
import { isHiddenCodePoint } from "../../runtime/display_name.ts";
import { fileGlob } from "../../runtime/tools/file_glob.ts";
import { fileGrep } from "../../runtime/tools/file_grep.ts";
import { steppingClock, withWorkspace } from "./workspace_fixture.ts";

const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);
/** For cap tests: a clock that never moves, so a loaded host cannot turn "ok" into file_timeout. */
const frozen = { now: () => 0 };

function many(dir: string, n: number, content = ""): void {
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (let i = 0; i < n; i++) Deno.writeTextFileSync(`${dir}/f${i}.txt`, content, { mode: 0o600 });
}

Deno.test("glob lists matches in stable UTF-8 byte order and skips .git", () => {
  withWorkspace((ws) => {
    for (
      const p of ["b.ts", "a/z.ts", "a-b.ts", "A.ts", "é.ts", "a/b/c.ts", ".git/hidden.ts", "x.md"]
    ) {
      ws.file(p, "x\n");
    }
    const g = fileGlob(ws.root, { pattern: "**/*.ts" });
    assert(g.ok);
    assertEquals(g.files, ["A.ts", "a-b.ts", "a/b/c.ts", "a/z.ts", "b.ts", "é.ts"]);
    const top = fileGlob(ws.root, { pattern: "*.ts" });
    assert(top.ok);
    assertEquals(top.files, ["A.ts", "a-b.ts", "b.ts", "é.ts"]);
    const sub = fileGlob(ws.root, { pattern: "?.ts", path: "a" });
    assert(sub.ok);
    assertEquals(sub.files, ["a/z.ts"]);
  });
});

Deno.test("glob refuses patterns outside its syntax", () => {
  withWorkspace((ws) => {
    for (
      const p of ["", "../*", "/etc/*", "a//b", "[ab].ts", "{a,b}", "a\\b", "a**b", "x".repeat(257)]
    ) {
      assertEquals(code(fileGlob(ws.root, { pattern: p })), "pattern_invalid", p);
    }
  });
});

Deno.test("glob and grep never follow symlinks, special files or hardlinks", () => {
  withWorkspace((ws) => {
    const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
    try {
      Deno.writeTextFileSync(`${outside}/secret.txt`, "needle\n");
      Deno.symlinkSync(outside, `${ws.dir}/out`);
      Deno.symlinkSync(`${outside}/secret.txt`, `${ws.dir}/leak.txt`);
      ws.file("ok.txt", "needle\n");
      ws.file("hard.txt", "needle\n");
      Deno.linkSync(`${ws.dir}/hard.txt`, `${ws.dir}/hard2.txt`);
      new Deno.Command("mkfifo", { args: [`${ws.dir}/pipe.txt`] }).outputSync();
      const g = fileGlob(ws.root, { pattern: "**/*.txt" });
      assert(g.ok);
      assertEquals(g.files, ["ok.txt"]);
      assertEquals(g.refused, 5);
      const r = fileGrep(ws.root, { pattern: "needle" });
      assert(r.ok);
      assertEquals(r.matches.map((m) => m.path), ["ok.txt"]);
    } finally {
      Deno.removeSync(outside, { recursive: true });
    }
  });
});

Deno.test("a flood of more than 4096 directory entries fails the search closed", () => {
  withWorkspace((ws) => {
    many(`${ws.dir}/flood`, 4097);
    assertEquals(code(fileGlob(ws.root, { pattern: "**/*.none" })), "search_limit");
    assertEquals(code(fileGrep(ws.root, { pattern: "x" })), "search_limit");
  });
});

Deno.test("more than 1024 files fails the search closed, 1024 are fine", () => {
  withWorkspace((ws) => {
    many(`${ws.dir}/a`, 1024);
    assertEquals(code(fileGlob(ws.root, { pattern: "**/*.txt" }, frozen)), "ok");
    many(`${ws.dir}/b`, 1);
    assertEquals(code(fileGlob(ws.root, { pattern: "**/*.txt" })), "search_limit");
  });
});

Deno.test("directories deeper than 16 levels are not entered and the result says so", () => {
  withWorkspace((ws) => {
    const d16 = Array.from({ length: 16 }, (_, i) => `d${i}`).join("/");
    ws.file(`${d16}/at16.txt`, "needle\n");
    ws.file(`${d16}/d16/at17.txt`, "needle\n");
    const g = fileGlob(ws.root, { pattern: "**/*.txt" });
    assert(g.ok);
    assertEquals(g.files, [`${d16}/at16.txt`]);
    assertEquals(g.truncated, "depth_limit");
    const r = fileGrep(ws.root, { pattern: "needle" });
    assert(r.ok);
    assertEquals(r.matches.length, 1);
    assertEquals(r.truncated, "depth_limit");
  });
});

Deno.test("grep reading more than 2 MiB in total fails closed", () => {
  withWorkspace((ws) => {
    const mb = "a".repeat(1023) + "\n";
    ws.file("one.txt", mb.repeat(1000));
    ws.file("two.txt", mb.repeat(1000));
    // A frozen clock: this test is about the byte bound, not the 1 s deadline (reading 2 MB
    // once took longer than that on a loaded machine and answered search_timeout).
    const frozen = { now: () => 0 };
    assertEquals(code(fileGrep(ws.root, { pattern: "zzz" }, frozen)), "ok");
    ws.file("three.txt", mb.repeat(200));
    assertEquals(code(fileGrep(ws.root, { pattern: "zzz" }, frozen)), "search_limit");
  });
});

Deno.test("grep stops at 128 matches with match_limit", () => {
  withWorkspace((ws) => {
    ws.file("m.txt", "hit\n".repeat(300));
    const r = fileGrep(ws.root, { pattern: "hit" });
    assert(r.ok);
    assertEquals(r.matches.length, 128);
    assertEquals(r.truncated, "match_limit");
  });
});

Deno.test("grep stops before its result exceeds 12 KiB with result_limit", () => {
  withWorkspace((ws) => {
    ws.file("wide.txt", ("hit " + "w".repeat(400) + "\n").repeat(100));
    const r = fileGrep(ws.root, { pattern: "hit" });
    assert(r.ok);
    assertEquals(r.truncated, "result_limit");
    assert(r.matches.length < 100 && r.matches.length > 10);
    // The whole serialised result, envelope included, stays within 12 KiB.
    assert(new TextEncoder().encode(JSON.stringify(r)).length <= 12 * 1024);
  });
});

Deno.test("grep refuses a file with a line longer than 16 KiB", () => {
  withWorkspace((ws) => {
    ws.file("long.txt", "needle" + "x".repeat(16 * 1024) + "\n");
    ws.file("short.txt", "needle\n");
    const r = fileGrep(ws.root, { pattern: "needle" });
    assert(r.ok);
    assertEquals(r.matches.map((m) => m.path), ["short.txt"]);
    assertEquals(r.refused, 1);
  });
});

Deno.test("grep and glob fail closed when the 1 s deadline passes", () => {
  withWorkspace((ws) => {
    many(`${ws.dir}/d`, 20, "x\n");
    assertEquals(
      code(fileGrep(ws.root, { pattern: "x" }, { now: steppingClock(100) })),
      "file_timeout",
    );
    assertEquals(
      code(fileGlob(ws.root, { pattern: "**" }, { now: steppingClock(100) })),
      "file_timeout",
    );
  });
});

Deno.test("grep is literal by default and uses the regex subset on request", () => {
  withWorkspace((ws) => {
    ws.file("r.txt", "a.c\nabc\ncolour\ncolor\n");
    const lit = fileGrep(ws.root, { pattern: "a.c" });
    assert(lit.ok);
    assertEquals(lit.matches.map((m) => m.line), [1]);
    const re = fileGrep(ws.root, { pattern: "a.c", regex: true });
    assert(re.ok);
    assertEquals(re.matches.map((m) => m.line), [1, 2]);
    const opt = fileGrep(ws.root, { pattern: "^colou?r$", regex: true });
    assert(opt.ok);
    assertEquals(opt.matches.map((m) => m.line), [3, 4]);
    assertEquals(code(fileGrep(ws.root, { pattern: "(a+)+$", regex: true })), "pattern_invalid");
  });
});

Deno.test("grep on a single file path searches only that file and refuses unsafe ones", () => {
  withWorkspace((ws) => {
    ws.file("one.txt", "needle\n");
    ws.file("two.txt", "needle\n");
    const r = fileGrep(ws.root, { pattern: "needle", path: "one.txt" });
    assert(r.ok);
    assertEquals(r.matches, [{ path: "one.txt", line: 1, text: "needle" }]);
    Deno.symlinkSync("two.txt", `${ws.dir}/l.txt`);
    assertEquals(code(fileGrep(ws.root, { pattern: "needle", path: "l.txt" })), "path_symlink");
  });
});

Deno.test("grep skips binary files and reports them as refused", () => {
  withWorkspace((ws) => {
    ws.file("bin.dat", new Uint8Array([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x00]));
    ws.file("t.txt", "needle\n");
    const r = fileGrep(ws.root, { pattern: "needle" });
    assert(r.ok);
    assertEquals(r.matches.map((m) => m.path), ["t.txt"]);
    assertEquals(r.refused, 1);
  });
});

Deno.test("a glob result, envelope included, stays within 12 KiB", () => {
  withWorkspace((ws) => {
    for (let i = 0; i < 200; i++) ws.file(`dir/${"n".repeat(90)}${i}.txt`, "");
    const g = fileGlob(ws.root, { pattern: "**/*.txt" });
    assert(g.ok);
    assertEquals(g.truncated, "result_limit");
    assert(g.files.length > 50 && g.files.length < 200);
    assert(new TextEncoder().encode(JSON.stringify(g)).length <= 12 * 1024);
  });
});

Deno.test("exactly 4096 directory entries are searched; the 4097th fails the search closed", () => {
  withWorkspace((ws) => {
    // Symlinks count as entries but never as files, so only the entry cap is in play.
    const flood = ws.mkdir("flood");
    const made = new Deno.Command("sh", {
      args: ["-c", 'cd "$1" && seq -f l%g 0 4094 | xargs ln -s -t .', "sh", flood],
    }).outputSync();
    assert(made.success);
    // A frozen clock: this test is about the entry cap, not the deadline of a loaded host.
    const g = fileGlob(ws.root, { pattern: "**" }, frozen);
    assert(g.ok);
    assertEquals(g.refused, 4095);
    assertEquals(code(fileGrep(ws.root, { pattern: "x" }, frozen)), "ok");
    Deno.symlinkSync("x", `${ws.dir}/flood/l4095`);
    assertEquals(code(fileGlob(ws.root, { pattern: "**" })), "search_limit");
    assertEquals(code(fileGrep(ws.root, { pattern: "x" })), "search_limit");
  });
});

Deno.test("grep reads exactly 2 MiB; one more byte fails the search closed", () => {
  withWorkspace((ws) => {
    const mib = ("a".repeat(1023) + "\n").repeat(1024);
    ws.file("one.txt", mib);
    ws.file("two.txt", mib);
    const r = fileGrep(ws.root, { pattern: "zzz" }, frozen);
    assert(r.ok);
    assertEquals(r.files_searched, 2);
    ws.file("three.txt", "z");
    assertEquals(code(fileGrep(ws.root, { pattern: "zzz" })), "search_limit");
  });
});

Deno.test("grep returns exactly 128 matches untruncated; the 129th truncates with match_limit", () => {
  withWorkspace((ws) => {
    ws.file("m.txt", "hit\n".repeat(128));
    const r = fileGrep(ws.root, { pattern: "hit" });
    assert(r.ok);
    assertEquals(r.matches.length, 128);
    assertEquals(r.truncated, "none");
    ws.file("n.txt", "hit\n");
    const over = fileGrep(ws.root, { pattern: "hit" });
    assert(over.ok);
    assertEquals(over.matches.length, 128);
    assertEquals(over.truncated, "match_limit");
  });
});

Deno.test("grep searches a line of exactly 16 KiB and refuses a file with a 16 KiB + 1 byte line", () => {
  withWorkspace((ws) => {
    ws.file("ascii.txt", "needle" + "x".repeat(16 * 1024 - 6) + "\r\n");
    ws.file("wide.txt", "needle" + "é".repeat((16 * 1024 - 6) / 2) + "\n");
    ws.file("astral.txt", "needle" + "😀".repeat(4094) + "xx\n");
    ws.file("over.txt", "needle" + "é".repeat((16 * 1024 - 6) / 2) + "x\n");
    ws.file("over4.txt", "needle" + "😀".repeat(4094) + "x".repeat(3) + "\n");
    const r = fileGrep(ws.root, { pattern: "needle" });
    assert(r.ok);
    assertEquals(r.matches.map((m) => m.path), ["ascii.txt", "astral.txt", "wide.txt"]);
    assertEquals(r.refused, 2);
  });
});

Deno.test("grep accepts a 256-byte pattern and refuses 257 bytes, literal or regex", () => {
  withWorkspace((ws) => {
    ws.file("p.txt", "é".repeat(128) + "\n");
    for (const regex of [false, true]) {
      const ok = fileGrep(ws.root, { pattern: "é".repeat(128), regex });
      assert(ok.ok);
      assertEquals(ok.matches.length, 1);
      assertEquals(
        code(fileGrep(ws.root, { pattern: "é".repeat(128) + "x", regex })),
        "pattern_invalid",
      );
    }
  });
});

Deno.test("a 1 MiB file of matching lines answers 128 matches with match_limit well inside 1 s", () => {
  withWorkspace((ws) => {
    // 524,288 one-byte matching lines: collecting every match would blow the deadline.
    ws.file("flood.txt", "h\n".repeat(512 * 1024));
    const r = fileGrep(ws.root, { pattern: "h" });
    assertEquals(code(r), "ok");
    assert(r.ok);
    assertEquals([r.matches.length, r.truncated], [128, "match_limit"]);
    assertEquals(r.matches[127], { path: "flood.txt", line: 128, text: "h" });
    // A later over-long line still refuses the whole file, early stop or not.
    ws.file("late.txt", "h\n".repeat(200) + "h".repeat(16 * 1024 + 1) + "\n");
    const late = fileGrep(ws.root, { pattern: "h", path: "late.txt" });
    assert(late.ok);
    assertEquals([late.matches.length, late.refused], [0, 1]);
  });
});

Deno.test("a glob result of exactly 12 KiB is whole; one more path truncates it with result_limit", () => {
  withWorkspace((ws) => {
    // 256 bytes of envelope reserve + 128 × (91-byte path + 2 quotes + 1 comma) = 12288.
    const name = (i: number) => `${"n".repeat(86)}${String(i).padStart(3, "0")}`;
    for (let i = 0; i < 128; i++) ws.file(`d/${name(i)}`, "");
    const at = fileGlob(ws.root, { pattern: "d/*" });
    assert(at.ok);
    assertEquals([at.files.length, at.truncated], [128, "none"]);
    assert(new TextEncoder().encode(JSON.stringify(at)).length <= 12 * 1024);
    ws.file(`d/${name(128)}`, "");
    const past = fileGlob(ws.root, { pattern: "d/*" });
    assert(past.ok);
    assertEquals([past.files.length, past.truncated], [128, "result_limit"]);
    assertEquals(past.files, at.files);
  });
});

Deno.test("glob and grep results show ESC, newline and U+202E in names escaped", () => {
  withWorkspace((ws) => {
    ws.file("clean.txt", "needle\n");
    ws.file("a\u001b[2Jb.txt", "needle\n");
    ws.file("line\nbreak.txt", "needle\n");
    ws.file("invoice\u202Etxt.exe", "needle\n");
    ws.file("d\u2066ir/x.txt", "needle\n");
    const want = [
      "a\\u{1B}[2Jb.txt",
      "clean.txt",
      "d\\u{2066}ir/x.txt",
      "invoice\\u{202E}txt.exe",
      "line\\u{A}break.txt",
    ];
    const g = fileGlob(ws.root, { pattern: "**/*" });
    assert(g.ok);
    assertEquals(g.files, want);
    const r = fileGrep(ws.root, { pattern: "needle" });
    assert(r.ok);
    assertEquals(r.matches.map((m) => m.path), want);
    for (const p of [...g.files, ...r.matches.map((m) => m.path)]) {
      assert([...p].every((ch) => !isHiddenCodePoint(ch.codePointAt(0)!)), p);
    }
  });
});
