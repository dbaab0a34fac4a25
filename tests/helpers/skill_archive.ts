/**
 * Skill archives built by the tests themselves [LC-3]: a ustar writer (the
 * product's own header encoder) plus hand-made headers for what the product
 * never writes (links, fifos, devices, GNU magic), gzip'd with fflate.
 */
import { gzipSync } from "fflate";
import { BLOCK, encodeHeader, padded } from "../../runtime/backup/tar.ts";

const enc = new TextEncoder();

export type Member =
  | { path: string; data: string | Uint8Array; mode?: number }
  | { path: string; dir: true }
  | { path: string; link: "symlink" | "hardlink" | "fifo" | "chardev"; target?: string };

/** Re-stamps a header's type flag (and link name) and its checksum. */
function restamp(h: Uint8Array, flag: string, linkName = ""): Uint8Array {
  const out = h.slice(0, BLOCK);
  out[156] = flag.charCodeAt(0);
  out.set(enc.encode(linkName).subarray(0, 100), 157);
  out.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of out) sum += b;
  out.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return out;
}

/** A tar stream of `members`; `gnuMagic` writes the GNU "ustar  " magic instead of POSIX's. */
export function tarOf(members: Member[], opts: { gnuMagic?: boolean; trailer?: number } = {}) {
  const parts: Uint8Array[] = [];
  for (const m of members) {
    if ("dir" in m) {
      parts.push(encodeHeader({ path: m.path, type: "dir", size: 0, mode: 0o755, mtime: 0 }));
    } else if ("link" in m) {
      const h = encodeHeader({ path: m.path, type: "file", size: 0, mode: 0o777, mtime: 0 });
      const flag = { symlink: "2", hardlink: "1", fifo: "6", chardev: "3" }[m.link];
      parts.push(restamp(h, flag, m.target ?? "/etc/passwd"));
    } else {
      const data = typeof m.data === "string" ? enc.encode(m.data) : m.data;
      parts.push(
        encodeHeader({
          path: m.path,
          type: "file",
          size: data.length,
          mode: m.mode ?? 0o644,
          mtime: 0,
        }),
      );
      const body = new Uint8Array(padded(data.length));
      body.set(data);
      parts.push(body);
    }
  }
  parts.push(new Uint8Array(2 * BLOCK + (opts.trailer ?? 0)));
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  if (opts.gnuMagic) {
    for (let h = 0; h < out.length; h += BLOCK) {
      if (String.fromCharCode(...out.subarray(h + 257, h + 263)) === "ustar\0") {
        const hdr = out.subarray(h, h + BLOCK);
        hdr.set(enc.encode("ustar  \0"), 257);
        hdr.set(restamp(hdr, String.fromCharCode(hdr[156])).subarray(148, 156), 148);
      }
    }
  }
  return out;
}

/** gzip of `tar`; `filename` pads the gzip header (to reach an exact archive size). */
export function gz(tar: Uint8Array, opts: { level?: 0 | 9; filename?: string } = {}): Uint8Array {
  return gzipSync(tar, { level: opts.level ?? 9, filename: opts.filename, mtime: 0 });
}

export interface ManifestLike {
  name: string;
  description?: string;
  entry?: string;
  args?: Record<string, unknown>;
  [k: string]: unknown;
}

export function manifestOf(m: ManifestLike): string {
  return JSON.stringify({
    description: "A test skill.",
    entry: "main.ts",
    args: { type: "object", properties: {}, required: [] },
    ...m,
  });
}

/** A valid skill archive: skill.json + main.ts (+ `extra` members). */
export function skillArchive(
  m: ManifestLike,
  script: string | Uint8Array,
  extra: Member[] = [],
): Uint8Array {
  const man = manifestOf(m);
  const entry = (JSON.parse(man) as { entry: string }).entry;
  return gz(tarOf([{ path: "skill.json", data: man }, { path: entry, data: script }, ...extra]));
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}
