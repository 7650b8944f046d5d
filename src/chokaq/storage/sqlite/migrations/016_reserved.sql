-- Placeholder: migration 016 belongs to another branch (batch handlers took 018). Delete this
-- file when that branch's migration 016 is merged.
SELECT 1;
