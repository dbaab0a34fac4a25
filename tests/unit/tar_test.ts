/** The strict ustar codec: round trips, and every refusal the parser owns. */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { ArchiveError, type ArchiveReason } from "../../runtime/backup/archive_error.ts";
import { DEFAULT_TAR_LIMITS } from "../../runtime/backup/extract.ts";
import {
  BLOCK,
  encodeHeader,
  END_OF_ARCHIVE,
  paxRecord,
  TarWriter,
} from "../../runtime/backup/tar.ts";
import {
  parsePax,
  type TarEvent,
  type TarLimits,
  TarParser,
} from "../../runtime/backup/tar_parser.ts";
import {
  BACKUP_ENTRIES_MAX,
  BACKUP_ENTRY_MAX_BYTES,
  BACKUP_TOTAL_MAX_BYTES,
  BACKUP_TRAILER_MAX_BYTES,
} from "../../runtime/limits.ts";

const enc = new TextEncoder();

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function build(fn: (w: TarWriter) => void): Uint8Array {
  const parts: Uint8Array[] = [];
  const w = new TarWriter((c) => parts.push(c.slice()));
  fn(w);
  w.finish();
  return concat(parts);
}

interface Parsed {
  path: string;
  type: string;
  size: number;
  mode: number;
  data: string;
}

function parseAll(bytes: Uint8Array, chunk = 7, limits: TarLimits = DEFAULT_TAR_LIMITS): Parsed[] {
  const p = new TarParser(limits);
  const out: Parsed[] = [];
  const apply = (evs: TarEvent[]) => {
    for (const ev of evs) {
      if (ev.kind === "entry") out.push({ ...ev.entry, mtime: undefined, data: "" } as Parsed);
      if (ev.kind === "data") out[out.length - 1].data += new TextDecoder().decode(ev.bytes);
    }
  };
  for (let i = 0; i < bytes.length; i += chunk) apply(p.push(bytes.subarray(i, i + chunk)));
  p.finish();
  return out.map(({ path, type, size, mode, data }) => ({ path, type, size, mode, data }));
}

function refusal(fn: () => unknown): ArchiveReason {
  const err = assertThrows(fn);
  if (!(err instanceof ArchiveError)) throw err;
  return err.reason;
}

/** A header block with a different type flag (checksum recomputed). */
function withFlag(h: Uint8Array, flag: string): Uint8Array {
  const b = h.slice(0, BLOCK);
  b[156] = flag.charCodeAt(0);
  return rechecksum(b);
}

function rechecksum(b: Uint8Array): Uint8Array {
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const x of b) sum += x;
  b.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return b;
}

const isRangeError = (e: unknown) => assert(e instanceof RangeError, String(e));

const fileHeader = (path: string, size: number) =>
  encodeHeader({ path, type: "file", size, mode: 0o600, mtime: 0 });

Deno.test("tar round-trips directories, empty files, block-sized files and UTF-8 names", () => {
  const long = "data/" + "deep/".repeat(30) + "file.txt"; // > 100 bytes, splits into prefix
  const huge = "data/" + "x".repeat(200) + "/" + "y".repeat(120); // needs a pax path record
  const bytes = build((w) => {
    w.addDir("data", 0o700, 0);
    w.addFile("data/empty", new Uint8Array(0), 0o600, 0);
    w.addFile("data/block", new Uint8Array(BLOCK).fill(0x61), 0o700, 0);
    w.addFile("data/héllo wörld.md", enc.encode("hi"), 0o600, 0);
    w.addFile(long, enc.encode("long"), 0o600, 0);
    w.addFile(huge, enc.encode("pax"), 0o600, 0);
  });
  assertEquals(bytes.length % BLOCK, 0);
  for (const chunk of [1, 7, 512, 100_000]) {
    const got = parseAll(bytes, chunk);
    assertEquals(got.map((e) => [e.path, e.type, e.size, e.mode]), [
      ["data", "dir", 0, 0o700],
      ["data/empty", "file", 0, 0o600],
      ["data/block", "file", BLOCK, 0o700],
      ["data/héllo wörld.md", "file", 2, 0o600],
      [long, "file", 4, 0o600],
      [huge, "file", 3, 0o600],
    ]);
    assertEquals(got[2].data, "a".repeat(BLOCK));
    assertEquals(got[5].data, "pax");
  }
});

Deno.test("tar writer refuses bytes beyond or short of the declared size", () => {
  const w = new TarWriter(() => {});
  w.beginFile("data/a", 2, 0o600, 0);
  assertThrows(() => w.write(new Uint8Array(3)), isRangeError);
  w.write(new Uint8Array(1));
  assertThrows(() => w.endFile(), isRangeError);
  assertThrows(() => w.addDir("data", 0o700, 0), isRangeError);
});

Deno.test("tar parser refuses hard links, symlinks, devices, fifos and foreign entry types", () => {
  const h = fileHeader("data/x", 0);
  const cases: [string, ArchiveReason][] = [
    ["1", "link_entry"],
    ["2", "link_entry"],
    ["3", "special_entry"],
    ["4", "special_entry"],
    ["6", "special_entry"],
    ["7", "unsupported_entry"],
    ["L", "unsupported_entry"],
    ["K", "unsupported_entry"],
    ["g", "unsupported_entry"],
    ["S", "unsupported_entry"],
  ];
  for (const [flag, reason] of cases) {
    const bytes = concat([withFlag(h, flag), END_OF_ARCHIVE]);
    assertEquals(refusal(() => parseAll(bytes)), reason, `type ${flag}`);
  }
});

Deno.test("tar parser refuses bad checksums, magic, numbers and directory sizes", () => {
  const h = fileHeader("data/x", 0);
  const badSum = h.slice();
  badSum[0] ^= 1;
  const noMagic = h.slice();
  noMagic.set(enc.encode("GNUtar"), 257);
  const base256 = h.slice();
  base256[124] = 0x80;
  const notOctal = h.slice();
  notOctal.set(enc.encode("0000000009x"), 124);
  const dirSize = withFlag(fileHeader("data/d", 1), "5");
  const cases: [Uint8Array, ArchiveReason][] = [
    [badSum, "bad_header"],
    [noMagic, "not_tar"],
    [rechecksum(base256), "bad_header"],
    [rechecksum(notOctal), "bad_header"],
    [dirSize, "bad_header"],
  ];
  for (const [block, reason] of cases) {
    assertEquals(refusal(() => parseAll(concat([block, END_OF_ARCHIVE]))), reason);
  }
});

Deno.test("tar parser refuses an archive cut short anywhere", () => {
  const bytes = build((w) => w.addFile("data/a", new Uint8Array(1000).fill(1), 0o600, 0));
  for (const cut of [0, 100, BLOCK, BLOCK + 999, bytes.length - BLOCK - 1, bytes.length - 1]) {
    assertEquals(refusal(() => parseAll(bytes.subarray(0, cut))), "truncated", `cut ${cut}`);
  }
  assertEquals(parseAll(bytes).length, 1);
});

Deno.test("tar parser refuses data after the end marker and a lone zero block", () => {
  const bytes = build((w) => w.addDir("data", 0o700, 0));
  const junk = concat([bytes, new Uint8Array(BLOCK).fill(0x41)]);
  assertEquals(refusal(() => parseAll(junk)), "trailing_data");
  const padded = concat([bytes, new Uint8Array(BACKUP_TRAILER_MAX_BYTES)]);
  assertEquals(parseAll(padded, 65536).length, 1);
  const over = concat([padded, new Uint8Array(1)]);
  assertEquals(refusal(() => parseAll(over, 65536)), "trailing_data");
  const lone = concat([new Uint8Array(BLOCK), fileHeader("data/x", 0), END_OF_ARCHIVE]);
  assertEquals(refusal(() => parseAll(lone)), "bad_header");
});

Deno.test("tar parser accepts exactly BACKUP_ENTRIES_MAX entries and refuses one more", () => {
  const h = encodeHeader({ path: "data", type: "dir", size: 0, mode: 0o700, mtime: 0 });
  const p = new TarParser(DEFAULT_TAR_LIMITS);
  for (let i = 0; i < BACKUP_ENTRIES_MAX; i++) p.push(h);
  assertEquals(refusal(() => p.push(h)), "too_many_entries");
});

Deno.test("tar parser refuses an entry over BACKUP_ENTRY_MAX_BYTES from its header alone", () => {
  const p = new TarParser(DEFAULT_TAR_LIMITS);
  p.push(fileHeader("data/ok", BACKUP_ENTRY_MAX_BYTES)); // exactly the bound is accepted
  const q = new TarParser(DEFAULT_TAR_LIMITS);
  assertEquals(
    refusal(() => q.push(fileHeader("data/big", BACKUP_ENTRY_MAX_BYTES + 1))),
    "entry_too_large",
  );
});

Deno.test("tar parser refuses more than BACKUP_TOTAL_MAX_BYTES of file data", () => {
  const p = new TarParser(DEFAULT_TAR_LIMITS);
  const zeros = new Uint8Array(64 * 1024 * 1024);
  const perEntry = BACKUP_ENTRY_MAX_BYTES;
  const fits = BACKUP_TOTAL_MAX_BYTES / perEntry;
  for (let i = 0; i < fits; i++) {
    p.push(fileHeader(`data/f${i}`, perEntry));
    for (let done = 0; done < perEntry; done += zeros.length) p.push(zeros);
  }
  assertEquals(refusal(() => p.push(fileHeader("data/one-more", 1))), "archive_too_large");
});

Deno.test("tar parser refuses a stream longer than its byte cap", () => {
  const limits = { ...DEFAULT_TAR_LIMITS, streamMaxBytes: 4 * BLOCK };
  const bytes = build((w) => w.addFile("data/a", new Uint8Array(3 * BLOCK), 0o600, 0));
  assertEquals(refusal(() => parseAll(bytes, BLOCK, limits)), "archive_too_large");
});

Deno.test("pax records: only a single path record is accepted", () => {
  assertEquals(parsePax(paxRecord("path", "data/é")), { path: "data/é" });
  assertEquals(
    paxRecord("path", "x").length,
    Number(new TextDecoder().decode(paxRecord("path", "x")).split(" ")[0]),
  );
  const cases: [Uint8Array, ArchiveReason][] = [
    [paxRecord("linkpath", "/etc/passwd"), "unsupported_entry"],
    [paxRecord("size", "99999999999"), "unsupported_entry"],
    [concat([paxRecord("path", "a"), paxRecord("path", "b")]), "unsupported_entry"],
    [enc.encode("99 path=a\n"), "bad_header"],
    [enc.encode("x path=a\n"), "bad_header"],
    [enc.encode("10 path=ab"), "bad_header"],
  ];
  for (const [body, reason] of cases) assertEquals(refusal(() => parsePax(body)), reason);
});

Deno.test("a pax header must be followed by an entry, not the end marker", () => {
  const full = encodeHeader({
    path: "data/" + "z".repeat(300),
    type: "file",
    size: 0,
    mode: 0o600,
    mtime: 0,
  });
  const paxOnly = full.subarray(0, full.length - BLOCK);
  assertEquals(refusal(() => parseAll(concat([paxOnly, END_OF_ARCHIVE]))), "bad_header");
  assert(parseAll(concat([full, END_OF_ARCHIVE]))[0].path.endsWith("z"));
});
