/**
 * The openat fallback of linuxfs/fs_anchor.ts (used only where openat2 is
 * missing) must refuse the same objects by itself: no symlink is followed at
 * the leaf, no slash or dot name is accepted, and FIFOs open O_PATH only.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { classifyOpenErrno, openatNoFollow, openBeneath } from "../../linuxfs/fs_anchor.ts";
import {
  closeFd,
  ELOOP,
  ENOENT,
  fstatx,
  O_DIRECTORY,
  O_PATH,
  O_RDONLY,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
} from "../../sandbox/libc.ts";
import { withWorkspace } from "./workspace_fixture.ts";

Deno.test("the openat fallback refuses a symlinked directory and a symlinked file", () => {
  withWorkspace((ws) => {
    ws.mkdir("real");
    ws.file("f.txt", "x\n");
    Deno.symlinkSync(`${ws.dir}/real`, `${ws.dir}/dirlink`);
    Deno.symlinkSync(`${ws.dir}/f.txt`, `${ws.dir}/filelink`);
    const d = openatNoFollow(ws.root.fd, "dirlink", O_RDONLY | O_DIRECTORY);
    assertEquals(d.fd, -1);
    assertEquals(classifyOpenErrno(ws.root.fd, "dirlink", d.errno), "path_symlink");
    const f = openatNoFollow(ws.root.fd, "filelink", O_RDONLY);
    assertEquals(f.errno, ELOOP);
    // O_PATH|O_NOFOLLOW yields the link itself, which the type check then refuses.
    const p = openatNoFollow(ws.root.fd, "filelink", O_PATH);
    assert(p.fd >= 0);
    const st = fstatx(p.fd);
    closeFd(p.fd);
    assert(st.ok && (st.st.mode & S_IFMT) === S_IFLNK);
  });
});

Deno.test("both open paths refuse names with a slash, dot or dot-dot", () => {
  withWorkspace((ws) => {
    ws.file("a/b.txt", "x\n");
    for (const name of ["a/b.txt", ".", "..", ""]) {
      assertEquals(openatNoFollow(ws.root.fd, name, O_RDONLY).errno, ENOENT, name);
      assertEquals(openBeneath(ws.root.fd, name, O_RDONLY).errno, ENOENT, name);
    }
  });
});

Deno.test("a FIFO opened O_PATH through either path does not block and shows its type", () => {
  withWorkspace((ws) => {
    new Deno.Command("mkfifo", { args: ["-m", "600", `${ws.dir}/p`] }).outputSync();
    for (const open of [openatNoFollow, openBeneath]) {
      const o = open(ws.root.fd, "p", O_PATH);
      assert(o.fd >= 0);
      const st = fstatx(o.fd);
      closeFd(o.fd);
      assert(st.ok && (st.st.mode & S_IFMT) === S_IFIFO);
    }
  });
});
