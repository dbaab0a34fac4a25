/**
 * Bootstrap token file and verifier [GW-2]: format, creation without
 * overwrite, private atomic replace, refusal of unsafe files, and
 * fixed-length digest comparison.
 */
import { AppError } from "../../runtime/errors.ts";
import {
  digestsEqual,
  ensureBootstrapToken,
  generateToken,
  isValidTokenFormat,
  loadToken,
  TOKEN_REL,
  tokenDigest,
  writeToken,
} from "../../runtime/secrets/bootstrap_token.ts";
import { assert, assertEquals, assertMatch, assertThrows } from "../helpers/assert.ts";
import { withTempHome } from "../helpers/home.ts";

const unsafe = (e: unknown) => assert(e instanceof AppError && e.code === "unsafe_path", String(e));

Deno.test("generated tokens are 64 lowercase hex characters and differ", () => {
  const a = generateToken();
  assertMatch(a, /^[0-9a-f]{64}$/);
  assert(a !== generateToken());
  assert(isValidTokenFormat(a));
});

Deno.test("token format accepts 10..128 chars of [A-Za-z0-9._~+-] only", () => {
  const ok = ["a".repeat(10), "x".repeat(128), "Az09._~+-Q", "0123456789"];
  const bad = [
    "a".repeat(9),
    "x".repeat(129),
    "has space1",
    "slash/abcdef",
    "new\nlineabc",
    "ümlautabcd",
    "",
  ];
  for (const t of ok) assert(isValidTokenFormat(t), t);
  for (const t of bad) assert(!isValidTokenFormat(t), JSON.stringify(t));
});

Deno.test("digests are fixed-length and compare only equal tokens as equal", () => {
  assertEquals(tokenDigest("x").byteLength, 32);
  assertEquals(tokenDigest("y".repeat(10_000)).byteLength, 32);
  assert(digestsEqual(tokenDigest("same-token"), tokenDigest("same-token")));
  assert(!digestsEqual(tokenDigest("same-token"), tokenDigest("same-tokeN")));
  assert(!digestsEqual(new Uint8Array(31), new Uint8Array(31)), "wrong length never matches");
});

Deno.test("first start creates a 0600 token; later starts never overwrite it", () =>
  withTempHome((home) => {
    assertEquals(ensureBootstrapToken(home), true);
    const path = `${home}/${TOKEN_REL}`;
    const first = Deno.readTextFileSync(path);
    assertMatch(first, /^[0-9a-f]{64}\n$/);
    assertEquals(Deno.statSync(path).mode! & 0o777, 0o600);
    assertEquals(Deno.statSync(`${home}/.runtime/secrets`).mode! & 0o777, 0o700);
    assertEquals(ensureBootstrapToken(home), false);
    assertEquals(Deno.readTextFileSync(path), first);
    const loaded = loadToken(home);
    assert(digestsEqual(loaded.digest, tokenDigest(first.trim())));
  }));

Deno.test("writeToken replaces atomically and privately, leaving no temp file", () =>
  withTempHome((home) => {
    ensureBootstrapToken(home);
    const before = loadToken(home).identity;
    writeToken(home, "Replaced-Token.1");
    const after = loadToken(home);
    assert(after.identity.ino !== before.ino, "a new inode (rename), not an in-place write");
    assert(digestsEqual(after.digest, tokenDigest("Replaced-Token.1")));
    assertEquals([...Deno.readDirSync(`${home}/.runtime/secrets`)].map((e) => e.name), [
      "web-bootstrap-token",
    ]);
    assertThrows(() => writeToken(home, "short"), (e) => assert(e instanceof AppError));
  }));

Deno.test("a readable-by-others, symlinked, malformed or oversized token file is refused", () =>
  withTempHome((home) => {
    ensureBootstrapToken(home);
    const path = `${home}/${TOKEN_REL}`;
    Deno.chmodSync(path, 0o644);
    assertThrows(() => loadToken(home), unsafe);
    Deno.chmodSync(path, 0o600);
    Deno.writeTextFileSync(path, "bad token with spaces\n");
    assertThrows(() => loadToken(home), unsafe);
    Deno.writeTextFileSync(path, "a".repeat(200));
    assertThrows(() => loadToken(home), unsafe);
    Deno.removeSync(path);
    Deno.writeTextFileSync(`${home}/elsewhere`, "Some-token-123\n", { mode: 0o600 });
    Deno.symlinkSync(`${home}/elsewhere`, path);
    assertThrows(() => loadToken(home), unsafe);
    assertThrows(() => ensureBootstrapToken(home), unsafe);
  }));
