-- An Agent bound to an external ACP runner [LC-6]: its Turns run on the operator's
-- registered `--acp-runner NAME` instead of the Worker and the model (NULL: native).
ALTER TABLE agents ADD COLUMN runner TEXT
  CHECK (runner IS NULL OR (length(runner) BETWEEN 1 AND 32 AND runner NOT GLOB '*[^a-z0-9-]*'));
