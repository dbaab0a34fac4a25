-- Documents per Agent [LC-4]: whether its Runs are offered document/extract_text
-- (1, the default) or not (0). Read at a Run's admission and at each call.
ALTER TABLE agents ADD COLUMN documents INTEGER NOT NULL DEFAULT 1 CHECK (documents IN (0,1));
