-- Placeholder: migration 014 belongs to another branch (batch handlers took 018). Delete this
-- file when that branch's migration 014 is merged.
SELECT 1;
