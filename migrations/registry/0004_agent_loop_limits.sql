-- An Agent's own agent-loop bounds [SB-8]: at most this many model calls and
-- tool calls per Turn and this Run deadline (seconds). NULL: the product's
-- bounds (32, 24, 900 s); a value can only lower them (the CHECKs are the
-- product's bounds of runtime/limits.ts).
ALTER TABLE agents ADD COLUMN max_model_calls INTEGER
  CHECK (max_model_calls IS NULL OR max_model_calls BETWEEN 1 AND 32);
ALTER TABLE agents ADD COLUMN max_tool_calls INTEGER
  CHECK (max_tool_calls IS NULL OR max_tool_calls BETWEEN 0 AND 24);
ALTER TABLE agents ADD COLUMN run_deadline_s INTEGER
  CHECK (run_deadline_s IS NULL OR run_deadline_s BETWEEN 10 AND 900);
