-- [PF-4] run_events becomes a rowid table. As a WITHOUT ROWID table it was an index b-tree,
-- whose cells keep at most ~230 bytes in the leaf on 1 KiB pages: every event (250–900
-- bytes) spilled into an overflow page of its own, and each Turn rewrote about 20 pages of
-- this table. Rowid rows keep up to ~990 bytes in the leaf and are appended in rowid order
-- (a Run's events are adjacent); the primary key (run_id, seq) stays, as a small index.
-- Same columns, same CHECKs, same key; rows are copied as they are.
CREATE TABLE run_events_rowid (
  run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 512),
  kind    TEXT NOT NULL CHECK (length(kind) <= 64),
  body    TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 65536),
  digest  TEXT NOT NULL CHECK (length(digest) = 71),
  PRIMARY KEY (run_id, seq)
) STRICT;
INSERT INTO run_events_rowid (run_id, seq, kind, body, digest)
  SELECT run_id, seq, kind, body, digest FROM run_events ORDER BY run_id, seq;
DROP TABLE run_events;
ALTER TABLE run_events_rowid RENAME TO run_events;
