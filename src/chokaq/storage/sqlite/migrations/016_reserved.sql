-- Reserved: migration 016 belongs to another branch under way (wave 3); this empty stand-in
-- keeps the numbers contiguous on the on-conflict branch (load_migrations refuses a gap) and
-- is dropped when that one merges.
SELECT 1;
