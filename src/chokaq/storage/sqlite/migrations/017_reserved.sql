-- Placeholder: migration 017 belongs to another branch (batch handlers took 018). Delete this
-- file when that branch's migration 017 is merged.
SELECT 1;
