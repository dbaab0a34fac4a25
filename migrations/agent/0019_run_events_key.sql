-- [PF-4] run_events loses its (run_id, seq) index. Each of a Turn's three commits wrote 1–4
-- pages of that index (about 7 per Turn: every commit rewrites the leaf holding the Run's
-- entries, and the leaves split). A Run now gets a small integer, `runs.journal_key` (1, 2, 3 …
-- in creation order; existing Runs take their rowid), and each event's rowid (event_key) is
-- `journal_key * 1024 + seq`: a Run's events are one rowid range of the table itself, found
-- and removed without any index, and a new Run's events are appended at the table's end. The
-- only index added is runs_journal_key, written once per Turn (one page at its right edge).
--
-- What the old key enforced still holds: the rowid is unique and fixes (Run, seq) — the CHECK
-- ties its low bits to seq (seq ≤ 512 < 1024), run_events_key_run ties its high part to the
-- Run named by run_id, whose journal_key is unique and never changes. The cascade from runs
-- becomes a trigger deleting the Run's rowid range (a foreign key without an index on
-- run_events.run_id would scan the whole table for every deleted Run). Rows are copied as
-- they are (body, body_z, digest unchanged): the digest chain does not cover the storage key.
ALTER TABLE runs ADD COLUMN journal_key INTEGER CHECK (journal_key IS NULL OR journal_key >= 1);
UPDATE runs SET journal_key = rowid;
CREATE UNIQUE INDEX runs_journal_key ON runs(journal_key);

CREATE TABLE run_events_keyed (
  event_key INTEGER PRIMARY KEY,
  run_id    TEXT NOT NULL,
  seq       INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 512),
  kind      TEXT NOT NULL CHECK (length(kind) <= 64),
  body      TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 65536),
  digest    TEXT NOT NULL CHECK (length(digest) = 71),
  body_z    BLOB CHECK (body_z IS NULL OR (length(body_z) BETWEEN 1 AND 65536 AND body = '')),
  CHECK (event_key % 1024 = seq)
) STRICT;
INSERT INTO run_events_keyed (event_key, run_id, seq, kind, body, digest, body_z)
  SELECT r.journal_key * 1024 + e.seq, e.run_id, e.seq, e.kind, e.body, e.digest, e.body_z
  FROM run_events e JOIN runs r ON r.id = e.run_id
  ORDER BY r.journal_key, e.seq;
DROP TABLE run_events;
ALTER TABLE run_events_keyed RENAME TO run_events;

-- An event belongs to an existing Run and sits in that Run's range.
CREATE TRIGGER run_events_key_run BEFORE INSERT ON run_events
WHEN (SELECT journal_key FROM runs WHERE id = new.run_id) IS NOT new.event_key / 1024 BEGIN
  SELECT RAISE(ABORT, 'run_events key outside its Run');
END;
CREATE TRIGGER run_events_key_fixed BEFORE UPDATE OF event_key, run_id, seq ON run_events BEGIN
  SELECT RAISE(ABORT, 'run_events key is fixed');
END;
CREATE TRIGGER runs_journal_key_fixed BEFORE UPDATE OF journal_key ON runs
WHEN old.journal_key IS NOT NULL BEGIN
  SELECT RAISE(ABORT, 'runs journal_key is fixed');
END;
CREATE TRIGGER run_events_cascade AFTER DELETE ON runs BEGIN
  DELETE FROM run_events
  WHERE event_key BETWEEN old.journal_key * 1024 AND old.journal_key * 1024 + 1023;
END;
