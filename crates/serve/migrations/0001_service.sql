-- The hosted mode's own tables. Written once for SQLite and PostgreSQL alike: portable types
-- only (TEXT, BIGINT), no autoincrement (ids are made by the host), times in Unix milliseconds.

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    -- The identity provider's `iss` and `sub`, for people who sign in with OpenID Connect.
    issuer TEXT,
    subject TEXT,
    admin BIGINT NOT NULL,
    -- Comma-separated group names, as the admin or the identity provider gave them.
    groups_list TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    UNIQUE (issuer, subject)
);

-- API tokens for scripts: only a SHA-256 of the token is kept.
CREATE TABLE api_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    revoked_ms BIGINT
);

-- Browser sign-ins: the cookie's hash, the CSRF token that goes with it.
CREATE TABLE web_sessions (
    hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    csrf TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);

-- An OpenID Connect sign-in under way: its state, PKCE verifier and nonce, until the callback.
CREATE TABLE login_states (
    state TEXT PRIMARY KEY,
    verifier TEXT NOT NULL,
    nonce TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);

-- Who may enable a catalogue server: `*`, `user:<id>` or `group:<name>`.
CREATE TABLE server_access (
    server TEXT NOT NULL,
    principal TEXT NOT NULL,
    PRIMARY KEY (server, principal)
);

CREATE TABLE enabled_servers (
    user_id TEXT NOT NULL REFERENCES users (id),
    server TEXT NOT NULL,
    PRIMARY KEY (user_id, server)
);

-- A user's own rules: `deny` or `ask` only, so a user can narrow the admin's policy, never widen it.
CREATE TABLE user_rules (
    user_id TEXT NOT NULL REFERENCES users (id),
    list TEXT NOT NULL,
    pattern TEXT NOT NULL,
    PRIMARY KEY (user_id, list, pattern)
);

CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    -- The engine's own conversation id in the user's store, once a turn made one.
    engine_id TEXT,
    title TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE INDEX conversations_by_user ON conversations (user_id, created_ms);

-- One row per turn. `running` turns hold a lease the replica running them renews; a lease that
-- expires (the replica died) makes the turn `interrupted`.
CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    user_id TEXT NOT NULL REFERENCES users (id),
    replica TEXT NOT NULL,
    state TEXT NOT NULL,
    lease_ms BIGINT NOT NULL,
    started_ms BIGINT NOT NULL,
    ended_ms BIGINT
);
-- At most one running turn per conversation, whichever replica tries to start a second.
CREATE UNIQUE INDEX one_running_turn ON turns (conversation_id) WHERE state = 'running';
CREATE INDEX running_turns ON turns (state, lease_ms);

-- Every event of a conversation, numbered from 1: the SSE id, so `Last-Event-ID` resumes
-- exactly after it on any replica.
CREATE TABLE events (
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    seq BIGINT NOT NULL,
    turn_id TEXT,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

-- Answers (approvals, elicitations, interrupts) for a turn that runs on another replica.
CREATE TABLE inbox (
    id TEXT PRIMARY KEY,
    replica TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    body TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX inbox_by_replica ON inbox (replica);

-- OAuth credentials for remote MCP servers, per user, server and issuer, sealed with the
-- host's key (AES-256-GCM); the nonce is stored beside the ciphertext.
CREATE TABLE oauth_credentials (
    user_id TEXT NOT NULL REFERENCES users (id),
    server TEXT NOT NULL,
    issuer TEXT NOT NULL,
    sealed TEXT NOT NULL,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (user_id, server, issuer)
);

-- Requests refused for want of a right (another user's object, a foreign origin, a missing
-- CSRF token): what was asked, by whom, and the answer. Never a token or a body.
CREATE TABLE refusals (
    at_ms BIGINT NOT NULL,
    user_id TEXT,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    status BIGINT NOT NULL,
    why TEXT NOT NULL
);
