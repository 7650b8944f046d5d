-- Placeholder: migration 015 belongs to another branch (batch handlers took 018). Delete this
-- file when that branch's migration 015 is merged.
SELECT 1;
