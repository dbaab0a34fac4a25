-- [EV-2, SB-8, OP-3] The schema holds exactly what the journal allows. dcb94f4 grew a Run's
-- journal to RUN_EVENTS_MAX = 1024 durable events and RUN_DURABLE_BYTES_MAX = 1 MiB
-- (runtime/events/journal.ts), but the CHECKs of 0003/0019 still said 512 events and 256 KiB: a
-- Run's 513th event (or its 257th KiB) failed its INSERT with a constraint error instead of the
-- Run ending at its designed bound with run_event_limit. Now seq is 1..1024, runs.event_count
-- 0..1024 and runs.durable_bytes 0..1048576 (the same numbers as limits.ts; tests pin them).
--
-- The event key. 0019's `journal_key * 1024 + seq` cannot hold seq 1024 (its low part would be
-- 0, the next Run's range). It becomes `journal_key * 1024 + (seq - 1)`: a Run's range is still
-- journal_key * 1024 .. + 1023, now exactly its 1024 events, so the Run part of a key
-- (`event_key / 1024`, run_events_key_run) and the cascade's range are unchanged, keys stay as
-- small as before, and a Run's events stay adjacent in seq order. (A span of 2048 would keep
-- `% span = seq` but leave half of every range unused; neither would survive a bound above 1024
-- without a new key, and run_store.ts refuses to load if RUN_EVENTS_MAX outgrows the span.)
-- Existing rows move down by one key (0019's CHECK made event_key % 1024 = seq, so the old
-- key - 1 is the new key); kind, body, body_z and digest are copied as they are — the digest
-- chain does not cover the storage key. The table is rebuilt as 0019 built it, with its CHECKs
-- and its two triggers; the cascade trigger on runs is re-created with the same range.
DROP TRIGGER run_events_cascade;

CREATE TABLE run_events_bound (
  event_key INTEGER PRIMARY KEY,
  run_id    TEXT NOT NULL,
  seq       INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 1024),
  kind      TEXT NOT NULL CHECK (length(kind) <= 64),
  body      TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 65536),
  digest    TEXT NOT NULL CHECK (length(digest) = 71),
  body_z    BLOB CHECK (body_z IS NULL OR (length(body_z) BETWEEN 1 AND 65536 AND body = '')),
  CHECK (event_key % 1024 = seq - 1)
) STRICT;
INSERT INTO run_events_bound (event_key, run_id, seq, kind, body, digest, body_z)
  SELECT event_key - 1, run_id, seq, kind, body, digest, body_z FROM run_events
  ORDER BY event_key;
DROP TABLE run_events;
ALTER TABLE run_events_bound RENAME TO run_events;

-- An event belongs to an existing Run and sits in that Run's range (as in 0019).
CREATE TRIGGER run_events_key_run BEFORE INSERT ON run_events
WHEN (SELECT journal_key FROM runs WHERE id = new.run_id) IS NOT new.event_key / 1024 BEGIN
  SELECT RAISE(ABORT, 'run_events key outside its Run');
END;
CREATE TRIGGER run_events_key_fixed BEFORE UPDATE OF event_key, run_id, seq ON run_events BEGIN
  SELECT RAISE(ABORT, 'run_events key is fixed');
END;
CREATE TRIGGER run_events_cascade AFTER DELETE ON runs BEGIN
  DELETE FROM run_events
  WHERE event_key BETWEEN old.journal_key * 1024 AND old.journal_key * 1024 + 1023;
END;

-- runs.event_count and runs.durable_bytes get the journal's bounds. SQLite changes a CHECK only
-- by rewriting the column or the table, and the usual table rebuild (new table, copy, DROP, RENAME)
-- cannot be done here: it needs foreign_keys OFF, which cannot change inside the migration's
-- transaction, and with it ON, `DROP TABLE runs` deletes every row first and cascades into
-- usage_ledger, permissions, operations, exec_records, runner_access and delegations. So each
-- column is replaced in place: a new column with the new CHECK, the values copied, the old column
-- dropped (no index, trigger, view or foreign key names either), the new one renamed. Every row
-- keeps its rowid and every other column; the table's other constraints, its indexes
-- (runs_one_active, runs_retention, runs_journal_key) and its triggers (runs_journal_key_fixed,
-- runs_dictionary_fixed, run_events_cascade) are untouched, and the UPDATE fires none of them.
-- The two columns move to the end of the table; every statement names its columns.
ALTER TABLE runs ADD COLUMN event_count_bound INTEGER NOT NULL DEFAULT 0
  CHECK (event_count_bound BETWEEN 0 AND 1024);
ALTER TABLE runs ADD COLUMN durable_bytes_bound INTEGER NOT NULL DEFAULT 0
  CHECK (durable_bytes_bound BETWEEN 0 AND 1048576);
UPDATE runs SET event_count_bound = event_count, durable_bytes_bound = durable_bytes;
ALTER TABLE runs DROP COLUMN event_count;
ALTER TABLE runs DROP COLUMN durable_bytes;
ALTER TABLE runs RENAME COLUMN event_count_bound TO event_count;
ALTER TABLE runs RENAME COLUMN durable_bytes_bound TO durable_bytes;
