-- A placeholder for migration 014, which another branch adds: migrations load without gaps, so
-- 015 needs a 014 to load on this branch. Drop this file when the real 014 is merged.
SELECT 1;
