-- [TL-11] Checkpoints: what each committed workspace mutation (file/edit, file/write,
-- exec/apply) replaced, in commit order, so a rewind can restore it. `before_state`:
-- `absent` (the mutation created the file: a rewind deletes it), `kept` (the replaced
-- bytes are in `before_bytes`, ≤ 1 MiB), `too_large` (over 1 MiB: never kept), `expired`
-- (kept once, dropped oldest-first by the 64 MiB per-Agent bound). `after_*` is what the
-- mutation left (NULL digest: it deleted the file), so a rewind can tell a file changed
-- since. Rows go with their Turn (and so with their Conversation).
CREATE TABLE checkpoints (
  seq             INTEGER PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  turn_id         TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
  run_id          TEXT NOT NULL CHECK (length(run_id) = 36),
  call_id         TEXT NOT NULL CHECK (length(call_id) <= 128),
  tool_id         TEXT NOT NULL CHECK (length(tool_id) <= 64),
  path            TEXT NOT NULL CHECK (length(CAST(path AS BLOB)) BETWEEN 1 AND 4096),
  before_state    TEXT NOT NULL CHECK (before_state IN ('absent','kept','too_large','expired')),
  before_size     INTEGER NOT NULL CHECK (before_size >= 0),
  after_digest    TEXT CHECK (after_digest IS NULL OR length(after_digest) = 64),
  after_dev       TEXT,
  after_ino       TEXT,
  created_at      INTEGER NOT NULL,
  expired_at      INTEGER,
  -- Last, so reading the other columns never walks the blob's overflow pages.
  before_bytes    BLOB CHECK (before_bytes IS NULL OR length(before_bytes) <= 1048576),
  CHECK ((before_state = 'kept') = (before_bytes IS NOT NULL)),
  CHECK ((after_digest IS NULL) = (after_ino IS NULL))
) STRICT;
CREATE INDEX checkpoints_turn ON checkpoints(turn_id, seq);
CREATE INDEX checkpoints_conversation ON checkpoints(conversation_id, seq);
-- Covering: the per-Agent sum and the oldest kept row are read from the index alone.
CREATE INDEX checkpoints_kept ON checkpoints(before_state, seq, before_size);

-- [UI-8] A branch made before a Turn (edit, regenerate, rewind) names that Turn of its
-- parent; the branches of one parent before one Turn are the alternatives `‹ 1/2 ›`
-- navigates. `branch_base` is how many Turns the branch copied (its first own Turn follows).
ALTER TABLE conversations ADD COLUMN branched_before_turn_id TEXT;
ALTER TABLE conversations ADD COLUMN branch_base INTEGER;
CREATE INDEX conversations_branch_point ON conversations(parent_id, branched_before_turn_id);
