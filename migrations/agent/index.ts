/** Embedded per-Agent state migrations, in order. Add new files here with the next number. */
import type { Migration } from "../../runtime/store/migrate.ts";
import m0001 from "./0001_init.sql" with { type: "text" };

export const AGENT_MIGRATIONS: readonly Migration[] = [
  { version: 1, sql: m0001 },
];
