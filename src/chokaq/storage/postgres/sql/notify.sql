-- Notification: the LISTEN a PgNotifier (notify.py) sends, handed to it by driver.py.
-- Conventions in connection.sql.

-- name: listen
LISTEN {channel}
