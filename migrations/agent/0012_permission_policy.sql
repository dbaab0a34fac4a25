-- Approvals [TL-10, TL-12]: the full diff kept one click away (≤ 256 KiB, else NULL) and the
-- narrowed "always allow" rule the approval offers (JSON, NULL when it offers none).
ALTER TABLE permissions ADD COLUMN full_diff TEXT
  CHECK (full_diff IS NULL OR length(CAST(full_diff AS BLOB)) <= 262144);
ALTER TABLE permissions ADD COLUMN always_rule TEXT
  CHECK (always_rule IS NULL OR length(always_rule) <= 2048);
