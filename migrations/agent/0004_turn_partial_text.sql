-- What a stopped or failed Turn had shown [#18, CV-5]: the visible text of the answer block
-- still open at the terminal, at most 12 KiB of UTF-8, written once in the terminal
-- transaction. It is shown under the Turn's safe summary and never enters model history
-- (history reads only completed Turns' assistant_message).
ALTER TABLE turns ADD COLUMN partial_text TEXT
  CHECK (partial_text IS NULL OR (state IN ('failed', 'cancelled')
    AND length(CAST(partial_text AS BLOB)) BETWEEN 1 AND 12288));
