-- [PF-4] A large event body (an answer block's text, a tool result) may be stored deflated:
-- `body_z` holds the raw-deflate bytes of the body's canonical JSON and `body` is then ''.
-- The body an event's digest covers is always the inflated text; readers inflate it
-- (runtime/store/run_store.ts), bounded by the same 64 KiB as `body`. Existing rows keep their
-- plain body.
ALTER TABLE run_events ADD COLUMN body_z BLOB
  CHECK (body_z IS NULL OR (length(body_z) BETWEEN 1 AND 65536 AND body = ''));
