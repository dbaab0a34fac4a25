/**
 * Shared pieces of the backup/restore integration tests: realistic homes
 * seeded through the product's own stores (registry + per-Agent state.sqlite
 * with Conversations and Turns + Capsule workspace files), a byte-exact
 * picture of a home tree, running the real CLI as a child process, and
 * re-encoding archives to build tampered ones.
 */
import { createHash } from "node:crypto";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { DEFAULT_TAR_LIMITS } from "../../runtime/backup/extract.ts";
import { decodeManifest, encodeManifest, type Manifest } from "../../runtime/backup/manifest.ts";
import { BLOCK, encodeHeader, END_OF_ARCHIVE, TarWriter } from "../../runtime/backup/tar.ts";
import type { TarEntryHeader } from "../../runtime/backup/tar.ts";
import { TarParser } from "../../runtime/backup/tar_parser.ts";
import { ensureHomeSkeleton, resolveHome } from "../../runtime/home.ts";
import { acquireInstanceLock } from "../../runtime/instance.ts";
import { AGENTS_MAX, CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import { insertConversation } from "../../runtime/store/agent_state_store.ts";
import { insertProvisioningAgent, markActive } from "../../runtime/store/registry_store.ts";
import { openDatabase } from "../../runtime/store/sqlite.ts";
import { addTurn } from "../helpers/agent_state.ts";
import { DENO, REPO, RUN_FLAGS } from "../helpers/server.ts";

export interface SeededAgent {
  id: string;
  conversations: string[];
}

/**
 * Seeds `home` like a server that ran: skeleton, instance lock file, two
 * active Agents each with Conversations, Turns and workspace files.
 */
export function seedHome(home: string): SeededAgent[] {
  const layout = resolveHome(home);
  ensureHomeSkeleton(layout);
  acquireInstanceLock(layout.root).release(); // leaves the lock file a real server leaves
  const reg = openDatabase({
    root: layout.root,
    relative: "data/agent-registry.sqlite",
    migrations: REGISTRY_MIGRATIONS,
  });
  const agents: SeededAgent[] = [];
  try {
    for (const name of ["Alpha", "Beta"]) {
      const id = crypto.randomUUID();
      insertProvisioningAgent(reg, { id, name, isSystem: false, now: Date.now() }, AGENTS_MAX);
      markActive(reg, id, Date.now());
      const ws = `${layout.root}/data/agents/${id}/workspace`;
      Deno.mkdirSync(`${ws}/src`, { recursive: true, mode: 0o700 });
      Deno.writeTextFileSync(`${ws}/agent-builder.md`, `# ${name}\n`, { mode: 0o600 });
      Deno.writeTextFileSync(`${ws}/src/main.ts`, `console.log("${name}");\n`, { mode: 0o600 });
      const db = openDatabase({
        root: layout.root,
        relative: `data/agents/${id}/state.sqlite`,
        migrations: AGENT_MIGRATIONS,
      });
      const conversations: string[] = [];
      try {
        for (let c = 0; c < 2; c++) {
          const conv = crypto.randomUUID();
          insertConversation(
            db,
            { id: conv, title: `${name} chat ${c}`, now: Date.now() },
            CONVERSATIONS_PER_AGENT_MAX,
          );
          for (let t = 0; t < 3; t++) addTurn(db, conv, "completed", `q${t}`);
          conversations.push(conv);
        }
      } finally {
        db.close();
      }
      agents.push({ id, conversations });
    }
  } finally {
    reg.close();
  }
  return agents;
}

/**
 * A byte-exact picture of a tree: every entry's type and permission bits,
 * and each file's size and SHA-256 (timestamps excluded). `skip` names
 * relative paths (and their subtrees) to leave out.
 */
export function treeSnapshot(root: string, skip: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const abs = rel ? `${root}/${rel}` : root;
    for (const e of [...Deno.readDirSync(abs)].map((d) => d.name).sort()) {
      const r = rel ? `${rel}/${e}` : e;
      if (skip.some((s) => r === s || r.startsWith(`${s}/`))) continue;
      const st = Deno.lstatSync(`${root}/${r}`);
      const mode = (st.mode! & 0o7777).toString(8);
      if (st.isSymlink) out[r] = `link ${Deno.readLinkSync(`${root}/${r}`)}`;
      else if (st.isDirectory) {
        out[r] = `dir ${mode}`;
        walk(r);
      } else {
        const sha = createHash("sha256").update(Deno.readFileSync(`${root}/${r}`)).digest("hex");
        out[r] = `file ${mode} ${st.size} ${sha}`;
      }
    }
  };
  walk("");
  return out;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `main.ts` with the launcher's permission flags. */
export async function runCli(args: string[]): Promise<CliResult> {
  const out = await new Deno.Command(DENO, {
    args: [...RUN_FLAGS, `${REPO}/main.ts`, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

export interface ArchiveEntry {
  header: TarEntryHeader;
  data: Uint8Array;
  /** Raw header blocks to emit instead of encoding `header` (for hostile entry types). */
  raw?: Uint8Array;
}

/** Parses a valid (uncompressed) archive into entries. */
export function readEntries(bytes: Uint8Array): ArchiveEntry[] {
  const p = new TarParser(DEFAULT_TAR_LIMITS);
  const out: ArchiveEntry[] = [];
  const chunks: Uint8Array[] = [];
  for (const ev of p.push(bytes)) {
    if (ev.kind === "entry") out.push({ header: ev.entry, data: new Uint8Array(0) });
    if (ev.kind === "data") chunks.push(ev.bytes.slice());
    if (ev.kind === "entry_end") {
      const last = out[out.length - 1];
      last.data = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let off = 0;
      for (const c of chunks) {
        last.data.set(c, off);
        off += c.length;
      }
      chunks.length = 0;
    }
  }
  p.finish();
  return out;
}

/** Encodes entries back into an archive (raw headers are emitted verbatim). */
export function writeEntries(entries: ArchiveEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const w = new TarWriter((c) => parts.push(c.slice()));
  for (const e of entries) {
    if (e.raw) {
      parts.push(e.raw, e.data, new Uint8Array((BLOCK - (e.data.length % BLOCK)) % BLOCK));
    } else if (e.header.type === "dir") {
      w.addDir(e.header.path, e.header.mode, e.header.mtime);
    } else w.addFile(e.header.path, e.data, e.header.mode, e.header.mtime);
  }
  if (entries.some((e) => e.raw)) parts.push(END_OF_ARCHIVE);
  else w.finish();
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** A header block of any type flag (checksum recomputed), e.g. "2" symlink, "3" char device. */
export function rawHeader(path: string, flag: string, size = 0, linkname = ""): Uint8Array {
  const h = encodeHeader({ path, type: "file", size, mode: 0o600, mtime: 0 }).slice(0, BLOCK);
  h[156] = flag.charCodeAt(0);
  h.set(new TextEncoder().encode(linkname), 157);
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const x of h) sum += x;
  h.set(new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return h;
}

/** Rewrites the manifest (last entry) so digests and sizes match the entries again. */
export function refreshManifest(entries: ArchiveEntry[], edit?: (m: Manifest) => void): void {
  const last = entries[entries.length - 1];
  const m = decodeManifest(last.data);
  m.entries = entries.filter((e) => e !== last && !e.raw).map((e) =>
    e.header.type === "dir" ? { path: e.header.path, type: "dir" as const } : {
      path: e.header.path,
      type: "file" as const,
      size: e.data.length,
      sha256: createHash("sha256").update(e.data).digest("hex"),
    }
  );
  edit?.(m);
  last.data = encodeManifest(m);
}
