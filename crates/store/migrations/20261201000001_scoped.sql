-- Every row now belongs to a scope (whose store it is: '' for a person's own file, a user id
-- in a service database), and the tables take the names and column types they have in a
-- shared database (`shared_migrations/`), so one set of queries serves both. The rows move
-- over unchanged into scope ''. Children go before parents, so no cascade deletes anything.

CREATE TABLE answers_scoped (
    scope           TEXT NOT NULL,
    server          TEXT NOT NULL,
    tool            TEXT NOT NULL,
    definition_hash TEXT NOT NULL,
    verdict         TEXT NOT NULL CHECK (verdict IN ('allow', 'deny')),
    answered_at     TEXT NOT NULL,
    PRIMARY KEY (scope, server, tool, definition_hash)
);
INSERT INTO answers_scoped
    SELECT '', server, tool, definition_hash, verdict, answered_at FROM remembered_answers;

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
INSERT INTO histories
    SELECT '', id, created_at, updated_at, model, workdir, title FROM conversations;

CREATE TABLE history_messages (
    scope           TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    turn            BIGINT NOT NULL,
    body            TEXT NOT NULL,
    PRIMARY KEY (scope, conversation_id, seq),
    FOREIGN KEY (scope, conversation_id) REFERENCES histories (scope, id) ON DELETE CASCADE
);
INSERT INTO history_messages SELECT '', conversation_id, seq, turn, body FROM messages;

CREATE TABLE tool_calls_scoped (
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
INSERT INTO tool_calls_scoped
    SELECT '', conversation_id, turn, call_id, rowid, name, server, tool, arguments, verdict,
        decided_by, is_error, refused, result_handle,
        CAST(round(unixepoch(started_at, 'subsec') * 1000) AS INTEGER), took_ms, background
    FROM tool_calls;

CREATE TABLE results_scoped (
    scope      TEXT NOT NULL,
    handle     TEXT NOT NULL,
    bytes      BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (scope, handle)
);
INSERT INTO results_scoped SELECT '', handle, bytes, created_at FROM results;

CREATE TABLE result_chunks_scoped (
    scope  TEXT NOT NULL,
    handle TEXT NOT NULL,
    seq    BIGINT NOT NULL,
    body   BYTEA NOT NULL,
    PRIMARY KEY (scope, handle, seq),
    FOREIGN KEY (scope, handle) REFERENCES results_scoped (scope, handle) ON DELETE CASCADE
);
INSERT INTO result_chunks_scoped SELECT '', handle, seq, body FROM result_chunks;

DROP TABLE result_chunks;
DROP TABLE results;
DROP TABLE tool_calls;
DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE remembered_answers;

-- Renaming a table rewrites the foreign keys that name it.
ALTER TABLE answers_scoped RENAME TO remembered_answers;
ALTER TABLE tool_calls_scoped RENAME TO tool_calls;
ALTER TABLE results_scoped RENAME TO results;
ALTER TABLE result_chunks_scoped RENAME TO result_chunks;

CREATE INDEX histories_by_workdir ON histories (scope, workdir, updated_at);
CREATE INDEX histories_by_update ON histories (scope, updated_at);
