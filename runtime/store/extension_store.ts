/**
 * The only SQL for extensions [LC-5] in `data/agent-registry.sqlite`: MCP
 * servers added through the API and each Agent's enabled servers (ordered).
 * Replacing an Agent's enabled list is one transaction.
 */
import type { DatabaseSync } from "node:sqlite";
import { transaction } from "./sqlite.ts";

export interface ExtensionRow {
  name: string;
  url: string;
  ca_pem: string | null;
  created_at: number;
}

export function listExtensionRows(db: DatabaseSync): ExtensionRow[] {
  return db.prepare(
    "SELECT name, url, ca_pem, created_at FROM extensions ORDER BY created_at, name",
  )
    .all() as unknown as ExtensionRow[];
}

export function insertExtensionRow(db: DatabaseSync, row: ExtensionRow): void {
  db.prepare("INSERT INTO extensions (name, url, ca_pem, created_at) VALUES (?, ?, ?, ?)")
    .run(row.name, row.url, row.ca_pem, row.created_at);
}

/** Removes the server and every Agent's enablement of it. */
export function deleteExtensionRow(db: DatabaseSync, name: string): void {
  transaction(db, () => {
    db.prepare("DELETE FROM extensions WHERE name = ?").run(name);
    db.prepare("DELETE FROM agent_extensions WHERE name = ?").run(name);
  });
}

export function enabledExtensions(db: DatabaseSync, agentId: string): string[] {
  return (db.prepare(
    "SELECT name FROM agent_extensions WHERE agent_id = ? ORDER BY position",
  ).all(agentId) as { name: string }[]).map((r) => r.name);
}

export function setEnabledExtensions(db: DatabaseSync, agentId: string, names: string[]): void {
  transaction(db, () => {
    db.prepare("DELETE FROM agent_extensions WHERE agent_id = ?").run(agentId);
    const ins = db.prepare(
      "INSERT INTO agent_extensions (agent_id, name, position) VALUES (?, ?, ?)",
    );
    names.forEach((n, i) => ins.run(agentId, n, i));
  });
}
