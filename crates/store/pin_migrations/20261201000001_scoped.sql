-- Pins now belong to a scope ('' for a person's own file, a user id in a service database),
-- as in `shared_migrations/`, so one set of queries serves both.
CREATE TABLE tool_pins_scoped (
    scope      TEXT NOT NULL,
    server     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    definition TEXT NOT NULL,
    pinned_at  TEXT NOT NULL,
    PRIMARY KEY (scope, server, tool)
);
INSERT INTO tool_pins_scoped SELECT '', server, tool, hash, definition, pinned_at FROM tool_pins;
DROP TABLE tool_pins;
ALTER TABLE tool_pins_scoped RENAME TO tool_pins;
