-- Agent model settings [MB-12, MB-14]: the default catalog model of the Agent's
-- Turns (NULL: the catalog default) and whether reasoning (`think`) is on.
ALTER TABLE agents ADD COLUMN default_model_id TEXT
  CHECK (default_model_id IS NULL OR length(default_model_id) BETWEEN 1 AND 256);
ALTER TABLE agents ADD COLUMN reasoning INTEGER NOT NULL DEFAULT 1 CHECK (reasoning IN (0,1));
