-- The web admin (/app): first-party sessions and one-time form tokens.
-- A session id is 256 random bits held only by the browser's cookie; the table keeps its
-- SHA-256, so a copy of the database cannot be replayed as a session.
CREATE TABLE web_sessions (
  id_hash     bytea PRIMARY KEY,
  user_id     text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX web_sessions_user_idx ON web_sessions (user_id);
CREATE INDEX web_sessions_expiry_idx ON web_sessions (expires_at);

-- "Create key" forms: each rendering carries a one-time token (stored as its SHA-256). The POST
-- that consumes it inserts the key in the same transaction, so a double submit makes one key.
-- The new key waits here, sealed (AES-256-GCM under a key derived from the raw session id, which
-- only the browser holds) until the page that shows it once is rendered; then it is erased.
CREATE TABLE web_form_tokens (
  token_hash    bytea PRIMARY KEY,
  session_hash  bytea NOT NULL REFERENCES web_sessions (id_hash) ON DELETE CASCADE,
  hub_id        text COLLATE "C" NOT NULL REFERENCES hubs (id),
  key_id        text COLLATE "C" REFERENCES api_keys (id) ON DELETE CASCADE,
  key_sealed    bytea,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL
);
CREATE INDEX web_form_tokens_session_idx ON web_form_tokens (session_hash);
CREATE INDEX web_form_tokens_expiry_idx ON web_form_tokens (expires_at);
