-- Who is refreshing a user's credential for a server right now, until when: the replicas'
-- refresh lock, so that one refresh happens where several replicas find a token due. A
-- lease that runs out (its replica died mid-refresh) may be taken by the next.
CREATE TABLE credential_leases (
    user_id TEXT NOT NULL REFERENCES users (id),
    server TEXT NOT NULL,
    issuer TEXT NOT NULL,
    holder TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    PRIMARY KEY (user_id, server, issuer)
);

-- Facts about the service as a whole. `credential_key_check` is a value sealed with the
-- credential key the first replica used: a replica started with another key refuses to run
-- instead of failing to open every user's credentials.
CREATE TABLE service_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- When an API token stops working; NULL: never (an admin's bootstrap token, if asked so).
ALTER TABLE api_tokens ADD COLUMN expires_ms BIGINT;
