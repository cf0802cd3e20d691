-- The engine's store inside a service database (SQLite or PostgreSQL: portable SQL only),
-- every row in the scope of one user. The same tables and columns as a person's own files
-- end up with (`migrations/`, `pin_migrations/`), so one set of queries serves both. The
-- service has its own `conversations`; the engine's side of one is a history.

CREATE TABLE remembered_answers (
    scope           TEXT NOT NULL,
    server          TEXT NOT NULL,
    tool            TEXT NOT NULL,
    definition_hash TEXT NOT NULL,
    verdict         TEXT NOT NULL CHECK (verdict IN ('allow', 'deny')),
    answered_at     TEXT NOT NULL,
    PRIMARY KEY (scope, server, tool, definition_hash)
);

CREATE TABLE histories (
    scope      TEXT NOT NULL,
    id         TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    model      TEXT NOT NULL,
    workdir    TEXT NOT NULL,
    title      TEXT,
    PRIMARY KEY (scope, id)
);
CREATE INDEX histories_by_workdir ON histories (scope, workdir, updated_at);
CREATE INDEX histories_by_update ON histories (scope, updated_at);

CREATE TABLE history_messages (
    scope           TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    turn            BIGINT NOT NULL,
    body            TEXT NOT NULL,
    PRIMARY KEY (scope, conversation_id, seq),
    FOREIGN KEY (scope, conversation_id) REFERENCES histories (scope, id) ON DELETE CASCADE
);

CREATE TABLE tool_calls (
    scope           TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn            BIGINT NOT NULL,
    call_id         TEXT NOT NULL,
    position        BIGINT NOT NULL,
    name            TEXT NOT NULL,
    server          TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,
    verdict         TEXT NOT NULL,
    decided_by      TEXT,
    is_error        BIGINT NOT NULL,
    refused         TEXT,
    result_handle   TEXT,
    started_ms      BIGINT NOT NULL,
    took_ms         BIGINT,
    background      BIGINT NOT NULL,
    PRIMARY KEY (scope, conversation_id, turn, call_id),
    FOREIGN KEY (scope, conversation_id) REFERENCES histories (scope, id) ON DELETE CASCADE
);

-- BYTEA is PostgreSQL's bytes; SQLite stores a blob as it is whatever the declared type.
CREATE TABLE results (
    scope      TEXT NOT NULL,
    handle     TEXT NOT NULL,
    bytes      BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (scope, handle)
);
CREATE TABLE result_chunks (
    scope  TEXT NOT NULL,
    handle TEXT NOT NULL,
    seq    BIGINT NOT NULL,
    body   BYTEA NOT NULL,
    PRIMARY KEY (scope, handle, seq),
    FOREIGN KEY (scope, handle) REFERENCES results (scope, handle) ON DELETE CASCADE
);

CREATE TABLE tool_pins (
    scope      TEXT NOT NULL,
    server     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    hash       TEXT NOT NULL,
    definition TEXT NOT NULL,
    pinned_at  TEXT NOT NULL,
    PRIMARY KEY (scope, server, tool)
);
