-- A token between "Connect" (the OAuth callback, or a pasted token) and the admin's choice of ad
-- accounts: kept server-side, never in the page. Sealed (AES-256-GCM) under a key derived from the
-- raw web session id, which only the admin's browser holds, so a copy of this table yields no
-- token; bound to that session and hub; single use; gone with the session or after its expiry.
CREATE TABLE ad_pending_connections (
  handle_hash       bytea PRIMARY KEY,
  session_hash      bytea NOT NULL REFERENCES web_sessions (id_hash) ON DELETE CASCADE,
  hub_id            text COLLATE "C" NOT NULL REFERENCES hubs (id) ON DELETE CASCADE,
  platform          text NOT NULL,
  kind              text NOT NULL CHECK (kind IN ('oauth', 'system_user')),
  token_sealed      bytea NOT NULL,
  token_expires_at  timestamptz,
  created_at        timestamptz NOT NULL,
  expires_at        timestamptz NOT NULL
);
CREATE INDEX ad_pending_connections_expiry_idx ON ad_pending_connections (expires_at);
