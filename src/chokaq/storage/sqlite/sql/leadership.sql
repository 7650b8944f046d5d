-- The leadership area: leases on a role (one holder each) with a fencing epoch, on the process
-- clock.
-- Run by sqlite/leadership.py; conventions in connection.sql.

-- name: leadership_claim
-- Take the role when it is free or expired, or renew the caller's own current term. A renewal
-- keeps the epoch; anything else starts a new term one epoch higher.
INSERT INTO {p}leadership AS l (name, holder, epoch, expires_at, renewed_at)
VALUES (:name, :holder, 1, (julianday('now') - 2440587.5) * 86400.0 + :lease,
        (julianday('now') - 2440587.5) * 86400.0)
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    epoch = CASE
        WHEN l.holder = excluded.holder AND l.epoch = :epoch
             AND l.expires_at > excluded.renewed_at THEN l.epoch
        ELSE l.epoch + 1
    END,
    expires_at = excluded.expires_at,
    renewed_at = excluded.renewed_at
WHERE l.expires_at <= excluded.renewed_at
   OR (l.holder = excluded.holder AND l.epoch = :epoch)
RETURNING name, holder, epoch, expires_at

-- name: leadership_release
UPDATE {p}leadership
SET expires_at = (julianday('now') - 2440587.5) * 86400.0
WHERE name = :name AND holder = :holder AND epoch = :epoch
  AND expires_at > (julianday('now') - 2440587.5) * 86400.0

-- name: leadership_get
SELECT name, holder, epoch, expires_at
FROM {p}leadership
WHERE name = :name AND expires_at > (julianday('now') - 2440587.5) * 86400.0

-- name: leadership_fence
-- The first statement of a write made under leadership; the write transaction holds the file's
-- write lock, so no rival can take the role before it commits.
SELECT 1
FROM {p}leadership
WHERE name = :name AND holder = :holder AND epoch = :epoch
  AND expires_at > (julianday('now') - 2440587.5) * 86400.0
