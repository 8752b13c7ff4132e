-- OAuth 2.1 authorization server storage (oidc-provider adapter), server secrets, and the hub
-- (and workspace) each grant acts in.

-- Every artifact oidc-provider stores: access/refresh tokens, authorization codes, sessions,
-- interactions, grants, registration access tokens. The id of a token or code IS the secret, so
-- only its SHA-256 is kept (and the payload is stored without it).
CREATE TABLE oauth_artifacts (
  model        text NOT NULL,
  id_hash      bytea NOT NULL,
  payload      jsonb NOT NULL,
  grant_id     text COLLATE "C",
  uid_hash     bytea,
  expires_at   timestamptz,
  consumed_at  timestamptz,
  PRIMARY KEY (model, id_hash)
);
CREATE INDEX oauth_artifacts_grant_idx ON oauth_artifacts (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_artifacts_uid_idx ON oauth_artifacts (model, uid_hash) WHERE uid_hash IS NOT NULL;
CREATE INDEX oauth_artifacts_expiry_idx ON oauth_artifacts (expires_at) WHERE expires_at IS NOT NULL;

-- Registered and pre-provisioned clients. client_secret inside metadata is replaced by its hash.
CREATE TABLE oauth_clients (
  client_id    text COLLATE "C" PRIMARY KEY,
  metadata     jsonb NOT NULL,
  provisioned  boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now()
);

-- The hub (and optionally workspace) a user chose on the consent screen for one grant.
CREATE TABLE oauth_grant_contexts (
  grant_id      text COLLATE "C" PRIMARY KEY,
  user_id       text COLLATE "C" NOT NULL REFERENCES users (id),
  hub_id        text COLLATE "C" NOT NULL REFERENCES hubs (id),
  workspace_id  text COLLATE "C",
  created_at    timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);
CREATE INDEX oauth_grant_contexts_user_idx ON oauth_grant_contexts (user_id);

-- Secrets every instance must share (cookie signing keys, the token signing key set), created
-- once by whichever instance starts first.
CREATE TABLE server_secrets (
  name        text PRIMARY KEY,
  value       jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
