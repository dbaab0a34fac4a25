/**
 * The only SQL for skills [LC-3] in an Agent's `state.sqlite` (migration
 * 0007): one row per installed skill — manifest, archive digest and the entry
 * script's bytes.
 *
 * What this file enforces: the per-Agent bound (SKILLS_PER_AGENT_MAX) and the
 * name's uniqueness are checked inside the insert's own transaction, so two
 * concurrent installs cannot both pass; reads are bounded by that count.
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError } from "../errors.ts";
import { SKILLS_PER_AGENT_MAX } from "../limits.ts";
import { transaction } from "./sqlite.ts";

export interface SkillRow {
  name: string;
  description: string;
  entry: string;
  manifest_json: string;
  digest: string;
  archive_bytes: number;
  script: Uint8Array;
  installed_at: number;
}

const COLUMNS =
  "name, description, entry, manifest_json, digest, archive_bytes, script, installed_at";

export function listSkillRows(db: DatabaseSync): SkillRow[] {
  return db.prepare(`SELECT ${COLUMNS} FROM skills ORDER BY name LIMIT ?`)
    .all(SKILLS_PER_AGENT_MAX) as unknown as SkillRow[];
}

export function getSkillRow(db: DatabaseSync, name: string): SkillRow | null {
  return (db.prepare(`SELECT ${COLUMNS} FROM skills WHERE name = ?`).get(name) as
    | SkillRow
    | undefined) ?? null;
}

/** Inserts a skill; `skill_exists` / `skill_limit` are decided in the same transaction. */
export function insertSkillRow(db: DatabaseSync, row: SkillRow): void {
  transaction(db, () => {
    if (db.prepare("SELECT 1 FROM skills WHERE name = ?").get(row.name)) {
      throw new AppError("skill_exists");
    }
    const n = (db.prepare("SELECT count(*) AS n FROM skills").get() as { n: number }).n;
    if (n >= SKILLS_PER_AGENT_MAX) throw new AppError("skill_limit");
    db.prepare(`INSERT INTO skills (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(
      row.name,
      row.description,
      row.entry,
      row.manifest_json,
      row.digest,
      row.archive_bytes,
      row.script,
      row.installed_at,
    );
  });
}

/** True when a row was removed. */
export function deleteSkillRow(db: DatabaseSync, name: string): boolean {
  return Number(db.prepare("DELETE FROM skills WHERE name = ?").run(name).changes) > 0;
}
