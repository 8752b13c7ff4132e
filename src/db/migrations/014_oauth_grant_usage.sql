-- Connected apps: when each OAuth grant's tokens were last used, and the grants acting in a hub
-- (a hub admin's list). Last use lives in its own table, not in oauth_grant_contexts, whose rows
-- are written once and never updated (migration 011). Each instance writes a grant's row at most
-- once a minute (src/domain/oauth/grant-usage.ts).
CREATE TABLE oauth_grant_usage (
  grant_id      text COLLATE "C" PRIMARY KEY REFERENCES oauth_grant_contexts (grant_id) ON DELETE CASCADE,
  last_used_at  timestamptz NOT NULL
) WITH (fillfactor = 70); -- room for in-page (HOT) updates: nothing here is indexed but the grant

CREATE INDEX oauth_grant_contexts_hub_idx ON oauth_grant_contexts (hub_id, created_at DESC);
