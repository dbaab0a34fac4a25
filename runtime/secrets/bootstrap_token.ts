/**
 * The Web bootstrap token [GW-2]: the one secret that represents the whole
 * installation. This module is its only owner. It creates the token on first
 * start (256-bit, 64 lowercase hex, mode 0600, private temp + fsync + atomic
 * rename), replaces it for `rotate-token`, and verifies login attempts by
 * comparing fixed-length SHA-256 digests in constant time.
 *
 * SECURITY: the token value never leaves this module except as a digest. It is
 * never logged, echoed, put in an error, a URL or a response. The file must be
 * a private regular file (0600, our uid, no symlink) or it is refused.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "../errors.ts";
import { TOKEN_BYTES, TOKEN_MAX_CHARS, TOKEN_MIN_CHARS } from "../limits.ts";
import { checkManagedPath, ensurePrivateDir, writePrivateFileAtomic } from "../path_safety.ts";

/** Where the token lives, relative to the home [PK-4]. */
export const TOKEN_REL = ".runtime/secrets/web-bootstrap-token";

/** Accepted token alphabet and length [GW-2]. */
export const TOKEN_RE = new RegExp(`^[A-Za-z0-9._~+-]{${TOKEN_MIN_CHARS},${TOKEN_MAX_CHARS}}$`);

/** A fresh random token: TOKEN_BYTES of CSPRNG output as lowercase hex. */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(TOKEN_BYTES));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function isValidTokenFormat(value: string): boolean {
  return TOKEN_RE.test(value);
}

/** SHA-256 of the UTF-8 token: a fixed 32-byte value whatever the input length. */
export function tokenDigest(value: string): Uint8Array {
  return new Uint8Array(createHash("sha256").update(value, "utf8").digest());
}

/** Constant-time equality of two digests (both always 32 bytes). */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== 32 || b.byteLength !== 32) return false;
  return timingSafeEqual(a, b);
}

/** Identity of the token file; a change means the token was replaced or edited. */
export interface TokenFileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

export function sameIdentity(a: TokenFileIdentity | null, b: TokenFileIdentity | null): boolean {
  if (a === null || b === null) return a === b;
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size &&
    a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/** Stats the token file (no symlink follow); null when it is missing. */
export function statTokenFile(root: string): TokenFileIdentity | null {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(`${root}/${TOKEN_REL}`);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  return {
    dev: info.dev,
    ino: info.ino ?? 0,
    size: info.size,
    mtimeMs: info.mtime?.getTime() ?? 0,
    ctimeMs: info.ctime?.getTime() ?? 0,
  };
}

export interface LoadedToken {
  digest: Uint8Array;
  identity: TokenFileIdentity;
}

/**
 * Reads and validates the token file: private regular file, valid format.
 * Throws AppError("unsafe_path") when the file is unsafe or malformed; the
 * detail never includes the content.
 */
export function loadToken(root: string): LoadedToken {
  try {
    return readTokenFile(root);
  } catch (err) {
    // Removed between the path check and the read (a concurrent edit): a fixed
    // refusal, so the SIGHUP path fails closed instead of throwing past `serve`.
    if (err instanceof Deno.errors.NotFound) {
      throw new AppError("unsafe_path", "token file vanished");
    }
    throw err;
  }
}

function readTokenFile(root: string): LoadedToken {
  checkManagedPath(root, TOKEN_REL, "file");
  const before = statTokenFile(root);
  const info = Deno.lstatSync(`${root}/${TOKEN_REL}`);
  // SECURITY: the secret must be readable by the owner only.
  if (info.mode === null || (info.mode & 0o077) !== 0) {
    throw new AppError("unsafe_path", "token file is not 0600");
  }
  if (info.size > TOKEN_MAX_CHARS + 1) throw new AppError("unsafe_path", "token file too large");
  const text = Deno.readTextFileSync(`${root}/${TOKEN_REL}`);
  const value = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (!isValidTokenFormat(value)) throw new AppError("unsafe_path", "token file malformed");
  const after = statTokenFile(root);
  if (before === null || !sameIdentity(before, after)) {
    throw new AppError("unsafe_path", "token file changed while reading");
  }
  return { digest: tokenDigest(value), identity: before };
}

/** Atomically and privately replaces (or creates) the token file with `value`. */
export function writeToken(root: string, value: string): void {
  if (!isValidTokenFormat(value)) throw new AppError("schema_violation", "token format");
  writePrivateFileAtomic(root, TOKEN_REL, new TextEncoder().encode(`${value}\n`));
}

/**
 * First start [GW-2]: creates a random token when none exists. Returns true
 * when a token was created. An existing file is never overwritten.
 */
export function ensureBootstrapToken(root: string): boolean {
  ensurePrivateDir(root, ".runtime/secrets");
  if (checkManagedPath(root, TOKEN_REL, "file", true)) return false;
  writeToken(root, generateToken());
  return true;
}
