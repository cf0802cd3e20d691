-- Conversations, their messages and tool calls, and large tool results spilled out of the
-- prompt. Timestamps are UTC ISO-8601 with milliseconds, so text order is time order.

CREATE TABLE IF NOT EXISTS conversations (
    -- 12 hex digits of Unix milliseconds + 20 random hex digits: sortable, not guessable.
    id         TEXT PRIMARY KEY NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    model      TEXT NOT NULL,
    -- The directory the conversation was started in: `--continue` resumes the latest one here.
    workdir    TEXT NOT NULL,
    title      TEXT
);
CREATE INDEX IF NOT EXISTS conversations_by_workdir ON conversations (workdir, updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_update ON conversations (updated_at);

-- The history, one row per message. The body is the engine's own JSON; the store never
-- looks inside it.
CREATE TABLE IF NOT EXISTS messages (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    turn            INTEGER NOT NULL,
    body            TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

-- The audit trail of tool calls: what was asked, who decided, how it went.
CREATE TABLE IF NOT EXISTS tool_calls (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn            INTEGER NOT NULL,
    call_id         TEXT NOT NULL,
    name            TEXT NOT NULL, -- the name the model saw
    server          TEXT NOT NULL,
    tool            TEXT NOT NULL, -- the server's own name for it
    arguments       TEXT NOT NULL, -- JSON
    verdict         TEXT NOT NULL,
    decided_by      TEXT,          -- JSON
    is_error        INTEGER NOT NULL,
    refused         TEXT,
    result_handle   TEXT,
    started_at      TEXT NOT NULL,
    took_ms         INTEGER,
    background      INTEGER NOT NULL,
    -- Providers only promise call ids unique within a turn; recording a call again (say,
    -- once when it starts and once when it ends) updates the row.
    PRIMARY KEY (conversation_id, turn, call_id)
);

-- Content-addressed: the handle is the first 16 bytes of the body's SHA-256 in hex, so the
-- same content is stored once however often it is put. The body is kept in chunks, so a
-- page of a 20 MB result is read without reading the rest (SQLite reads a whole value to
-- take part of it).
CREATE TABLE IF NOT EXISTS results (
    handle     TEXT PRIMARY KEY NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS result_chunks (
    handle TEXT NOT NULL REFERENCES results (handle) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    body   BLOB NOT NULL,
    PRIMARY KEY (handle, seq)
);
