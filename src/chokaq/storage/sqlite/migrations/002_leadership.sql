-- Leadership leases: one row per role ("maintenance", later "schedules"), taken and renewed by
-- compare-and-set against the database's clock and expiring unless renewed. ``epoch`` is the
-- fencing token: it grows by one each time the role changes hands (or lapses), and every write
-- made under leadership names it, so a holder whose lease lapsed writes nothing. The row is
-- never deleted (release only expires it), so epochs never repeat.
CREATE TABLE {p}leadership (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    epoch      INTEGER NOT NULL CHECK (epoch >= 1),
    expires_at REAL NOT NULL,
    renewed_at REAL NOT NULL
);
