-- The leadership area: leases on a role (one holder each) with a fencing epoch, on the database's
-- clock (clock_timestamp(), not the transaction's start, so a statement that waited on a row lock
-- judges expiry when it runs); leadership_fence is run by connection.py's PostgresCore before
-- every fenced write.
-- Run by postgres/leadership.py; conventions in connection.sql.

-- name: leadership_claim
-- Take the role when it is free or expired, or renew the caller's own current term; one
-- statement, so two claimants racing are serialized on the row and exactly one wins. A renewal
-- keeps the epoch; anything else starts a new term one epoch higher.
INSERT INTO {schema}.leadership AS l (name, holder, epoch, expires_at, renewed_at)
VALUES (%(name)s, %(holder)s, 1,
        clock_timestamp() + make_interval(secs => %(lease)s::float8), clock_timestamp())
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    epoch = CASE
        WHEN l.holder = excluded.holder AND l.epoch = %(epoch)s::bigint
             AND l.expires_at > clock_timestamp() THEN l.epoch
        ELSE l.epoch + 1
    END,
    expires_at = excluded.expires_at,
    renewed_at = excluded.renewed_at
WHERE l.expires_at <= clock_timestamp()
   OR (l.holder = excluded.holder AND l.epoch = %(epoch)s::bigint)
RETURNING l.name, l.holder, l.epoch, l.expires_at

-- name: leadership_release
UPDATE {schema}.leadership
SET expires_at = clock_timestamp()
WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s
  AND expires_at > clock_timestamp()

-- name: leadership_get
SELECT name, holder, epoch, expires_at
FROM {schema}.leadership
WHERE name = %(name)s AND expires_at > clock_timestamp()

-- name: leadership_fence
-- The first statement of a write made under leadership: the term is current, and FOR SHARE
-- holds it so until the write commits (a rival's take-over waits, then finds it renewed or
-- expired on its own clock reading). A holder frozen or cut off mid-transaction would hold that
-- row lock, and so the role, for as long as its session lives: the transaction may therefore
-- sit idle for no longer than what is left of the lease, after which the server ends the
-- session and its locks with it.
SELECT set_config(
    'idle_in_transaction_session_timeout',
    greatest(1, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000))::bigint::text,
    true
)
FROM {schema}.leadership
WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s
  AND expires_at > clock_timestamp()
FOR SHARE
