/** Embedded registry migrations, in order. Add new files here with the next number. */
import type { Migration } from "../../runtime/store/migrate.ts";
import m0001 from "./0001_init.sql" with { type: "text" };
import m0002 from "./0002_agent_lifecycle.sql" with { type: "text" };
import m0003 from "./0003_agent_model_settings.sql" with { type: "text" };
import m0004 from "./0004_agent_loop_limits.sql" with { type: "text" };
import m0005 from "./0005_extensions.sql" with { type: "text" };
import m0006 from "./0006_agent_runner.sql" with { type: "text" };
import m0007 from "./0007_agent_documents.sql" with { type: "text" };
import m0008 from "./0008_agent_policy.sql" with { type: "text" };

export const REGISTRY_MIGRATIONS: readonly Migration[] = [
  { version: 1, sql: m0001 },
  { version: 2, sql: m0002 },
  { version: 3, sql: m0003 },
  { version: 4, sql: m0004 },
  { version: 5, sql: m0005 },
  { version: 6, sql: m0006 },
  { version: 7, sql: m0007 },
  { version: 8, sql: m0008 },
];
