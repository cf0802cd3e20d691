-- The first definition seen of every tool (trust on first use). A later different
-- definition is drift until the user accepts it.
CREATE TABLE IF NOT EXISTS tool_pins (
    server     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    definition TEXT NOT NULL,
    pinned_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (server, tool)
);
