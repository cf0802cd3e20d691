-- "Always" answers to approval questions. Keyed by the exact tool definition, so a changed
-- definition is asked about again.
CREATE TABLE IF NOT EXISTS remembered_answers (
    server          TEXT NOT NULL,
    tool            TEXT NOT NULL,
    definition_hash TEXT NOT NULL,
    verdict         TEXT NOT NULL CHECK (verdict IN ('allow', 'deny')),
    answered_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (server, tool, definition_hash)
);
