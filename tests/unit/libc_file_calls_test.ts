/**
 * The typed per-file bindings of sandbox/libc.ts [PF-3] are the generic
 * syscalls: the same Statx field for field, the same fds and errno codes,
 * the same refusal of a NUL in a name.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  AT_SYMLINK_NOFOLLOW,
  EBADF,
  ELOOP,
  ENOENT,
  ENOTDIR,
  fileClose,
  fileFstatx,
  fileGetdents,
  fileLseek,
  fileOpenat2,
  filePread,
  fileStatx,
  fstatx,
  lastFileErrno,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  RESOLVE_BENEATH,
  RESOLVE_NO_MAGICLINKS,
  RESOLVE_NO_SYMLINKS,
  RESOLVE_NO_XDEV,
  SEEK_HOLE,
  statx,
  syscall,
} from "../../sandbox/libc.ts";

function how(flags: number): Uint8Array {
  const b = new Uint8Array(24);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, BigInt(flags | O_NOFOLLOW | O_CLOEXEC), true);
  v.setBigUint64(
    16,
    BigInt(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV),
    true,
  );
  return b;
}

function withDir(fn: (dirfd: number, dir: string) => void): void {
  const dir = Deno.makeTempDirSync({ prefix: "ab-libc-file-" });
  const r = syscall(
    "openat",
    -100,
    new TextEncoder().encode(dir + "\0"),
    O_RDONLY | O_DIRECTORY | O_CLOEXEC,
    0,
  );
  assert(r.ret >= 0n);
  const fd = Number(r.ret);
  try {
    fn(fd, dir);
  } finally {
    syscall("close", fd);
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("fileStatx and fileFstatx give statx's fields and errno for files, links, long and non-ASCII names", () => {
  withDir((dirfd, dir) => {
    const long = "n".repeat(255);
    for (const name of ["a.txt", "é-ü.txt", long]) {
      Deno.writeTextFileSync(`${dir}/${name}`, "hello\n");
    }
    Deno.symlinkSync("a.txt", `${dir}/link`);
    for (const name of ["a.txt", "é-ü.txt", long, "link", "missing", "a.txt/x", "n".repeat(256)]) {
      const want = statx(dirfd, name, AT_SYMLINK_NOFOLLOW);
      const gotten = fileStatx(dirfd, name, AT_SYMLINK_NOFOLLOW);
      assertEquals(gotten, want, name);
      if (!gotten.ok) assertEquals(lastFileErrno(), gotten.errno);
    }
    assertEquals(fileStatx(dirfd, "missing", 0), { ok: false, errno: ENOENT });
    assertEquals(fileStatx(dirfd, "a.txt/x", 0), { ok: false, errno: ENOTDIR });
    assertEquals(fileFstatx(dirfd), fstatx(dirfd));
    assertEquals(fileFstatx(1 << 20), { ok: false, errno: EBADF });
    let threw = false;
    try {
      fileStatx(dirfd, "a\0b", 0);
    } catch {
      threw = true;
    }
    assert(threw, "a NUL inside a name is refused");
  });
});

Deno.test("fileOpenat2, filePread, fileLseek, fileGetdents and fileClose return what the syscalls do", () => {
  withDir((dirfd, dir) => {
    Deno.writeTextFileSync(`${dir}/a.txt`, "hello world\n");
    Deno.symlinkSync("a.txt", `${dir}/link`);
    assertEquals(fileOpenat2(dirfd, "missing", how(O_RDONLY)), -1);
    assertEquals(lastFileErrno(), ENOENT);
    assertEquals(fileOpenat2(dirfd, "link", how(O_RDONLY)), -1);
    assertEquals(lastFileErrno(), ELOOP);
    const fd = fileOpenat2(dirfd, "a.txt", how(O_RDONLY));
    assert(fd >= 0);
    assertEquals(lastFileErrno(), 0);
    const buf = new Uint8Array(32);
    assertEquals(filePread(fd, buf.subarray(0, 5), 6), 5);
    assertEquals(new TextDecoder().decode(buf.subarray(0, 5)), "world");
    assertEquals(filePread(fd, buf, 12), 0);
    assertEquals(fileLseek(fd, 0, SEEK_HOLE), 12n);
    fileClose(fd);
    assertEquals(lastFileErrno(), 0);
    assertEquals(filePread(fd, buf, 0), -1);
    assertEquals(lastFileErrno(), EBADF);
    assertEquals(fileLseek(fd, 0, SEEK_HOLE), -1n);
    assertEquals(lastFileErrno(), EBADF);
    const dents = new Uint8Array(4096);
    assert(fileGetdents(dirfd, dents) > 0);
    assertEquals(fileGetdents(dirfd, dents), 0);
    assertEquals(fileGetdents(fd, dents), -1);
    assertEquals(lastFileErrno(), EBADF);
  });
});
