/** Embedded per-Agent state migrations, in order. Add new files here with the next number. */
import type { Migration } from "../../runtime/store/migrate.ts";
import m0001 from "./0001_init.sql" with { type: "text" };
import m0002 from "./0002_conversation_paging.sql" with { type: "text" };
import m0003 from "./0003_runs.sql" with { type: "text" };
import m0004 from "./0004_turn_partial_text.sql" with { type: "text" };
import m0005 from "./0005_exec.sql" with { type: "text" };
import m0006 from "./0006_search.sql" with { type: "text" };
import m0007 from "./0007_skills.sql" with { type: "text" };
import m0008 from "./0008_checkpoints.sql" with { type: "text" };
import m0009 from "./0009_runner_access.sql" with { type: "text" };
import m0010 from "./0010_tasks.sql" with { type: "text" };
import m0011 from "./0011_delegations.sql" with { type: "text" };
import m0012 from "./0012_permission_policy.sql" with { type: "text" };
import m0013 from "./0013_compactions.sql" with { type: "text" };
import m0014 from "./0014_run_events_rowid.sql" with { type: "text" };
import m0015 from "./0015_search_at_turn_end.sql" with { type: "text" };
import m0016 from "./0016_search_external_content.sql" with { type: "text" };
import m0017 from "./0017_search_docs_index.sql" with { type: "text" };
import m0018 from "./0018_run_events_deflate.sql" with { type: "text" };
import m0019 from "./0019_run_events_key.sql" with { type: "text" };
import m0020 from "./0020_run_events_dictionary.sql" with { type: "text" };
import m0021 from "./0021_turn_answer_deflate.sql" with { type: "text" };
import m0022 from "./0022_run_events_bound.sql" with { type: "text" };

export const AGENT_MIGRATIONS: readonly Migration[] = [
  { version: 1, sql: m0001 },
  { version: 2, sql: m0002 },
  { version: 3, sql: m0003 },
  { version: 4, sql: m0004 },
  { version: 5, sql: m0005 },
  { version: 6, sql: m0006 },
  { version: 7, sql: m0007 },
  { version: 8, sql: m0008 },
  { version: 9, sql: m0009 },
  { version: 10, sql: m0010 },
  { version: 11, sql: m0011 },
  { version: 12, sql: m0012 },
  { version: 13, sql: m0013 },
  { version: 14, sql: m0014 },
  { version: 15, sql: m0015 },
  { version: 16, sql: m0016 },
  { version: 17, sql: m0017 },
  { version: 18, sql: m0018 },
  { version: 19, sql: m0019 },
  { version: 20, sql: m0020 },
  { version: 21, sql: m0021 },
  { version: 22, sql: m0022 },
];
