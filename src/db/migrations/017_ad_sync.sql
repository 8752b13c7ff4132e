-- Spend that syncs by itself (issue 21): connections to ad platforms (sealed tokens), the sync
-- state of each connected ad account (the account row is also its job: the sync loop claims it
-- with FOR UPDATE SKIP LOCKED under a lease), the platform's rows per UTC day, and the
-- attribution mappings an admin makes. A synced account's `spend` rows are derived from its
-- platform rows in the transaction that writes them.

-- One reporting currency per hub: spend in any other currency is refused at connect.
ALTER TABLE hubs ADD COLUMN reporting_currency text NOT NULL DEFAULT 'USD' CHECK (reporting_currency ~ '^[A-Z]{3}$');

CREATE TABLE ad_connections (
  id               text COLLATE "C" PRIMARY KEY,
  hub_id           text COLLATE "C" NOT NULL REFERENCES hubs (id),
  platform         text NOT NULL CHECK (platform IN ('meta', 'google_ads', 'chatgpt_ads')),
  kind             text NOT NULL CHECK (kind IN ('oauth', 'system_user', 'api_key')),
  label            text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
  -- AES-256-GCM under the server's secrets key, the connection id as additional data
  -- (src/platform/sealing.ts): a database read alone never yields a usable token.
  token_sealed     bytea NOT NULL,
  token_expires_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (hub_id, id)
);

-- connection_id NULL: an imported account (spend from NDJSON), or a disconnected one
-- (disconnected_at set); no loop syncs either.
ALTER TABLE ad_accounts
  ADD COLUMN connection_id        text COLLATE "C",
  ADD COLUMN external_id          text COLLATE "C",
  ADD COLUMN currency             text CHECK (currency ~ '^[A-Z]{3}$'),
  ADD COLUMN time_zone            text,
  ADD COLUMN default_workspace_id text COLLATE "C",
  -- The last account-local day whose spend is fully read and stored (never today).
  ADD COLUMN complete_through     date,
  ADD COLUMN next_sync_at         timestamptz,
  -- Who runs the account's sync, and until when the claim holds (extended per chunk).
  ADD COLUMN lease_until          timestamptz,
  ADD COLUMN lease_owner          text,
  ADD COLUMN sync_requested_at    timestamptz,
  ADD COLUMN last_attempt_at      timestamptz,
  ADD COLUMN failure_kind         text CHECK (failure_kind IN ('needs_reconnect', 'missing_permission', 'invalid_request', 'platform_error', 'bad_answer', 'unreachable')),
  -- The platform's own words for a person, and its code(s), kept for display.
  ADD COLUMN failure_message      text,
  ADD COLUMN failure_code         text,
  ADD COLUMN failing_since        timestamptz,
  -- Consecutive failed runs: the backoff step of the next retry.
  ADD COLUMN failure_count        integer NOT NULL DEFAULT 0,
  ADD COLUMN throttled_until      timestamptz,
  ADD COLUMN disconnected_at      timestamptz,
  ADD FOREIGN KEY (hub_id, connection_id) REFERENCES ad_connections (hub_id, id),
  ADD FOREIGN KEY (hub_id, default_workspace_id) REFERENCES workspaces (hub_id, id),
  ADD CHECK (connection_id IS NULL OR (external_id IS NOT NULL AND currency IS NOT NULL AND time_zone IS NOT NULL));

CREATE UNIQUE INDEX ad_accounts_external_idx ON ad_accounts (hub_id, platform, external_id) WHERE external_id IS NOT NULL;
-- The loop's claim: connected accounts by when they are due.
CREATE INDEX ad_accounts_due_idx ON ad_accounts (next_sync_at) WHERE connection_id IS NOT NULL;
CREATE INDEX ad_accounts_requested_idx ON ad_accounts (sync_requested_at) WHERE sync_requested_at IS NOT NULL;
CREATE INDEX ad_accounts_connection_idx ON ad_accounts (connection_id) WHERE connection_id IS NOT NULL;

-- The platform's spend per UTC day, account, campaign and ad set, rounded to cents once.
CREATE TABLE ad_spend_rows (
  hub_id        text COLLATE "C" NOT NULL,
  ad_account_id text COLLATE "C" NOT NULL,
  date          date NOT NULL,
  campaign_id   text COLLATE "C" NOT NULL,
  campaign_name text NOT NULL,
  ad_set_id     text COLLATE "C" NOT NULL,
  ad_set_name   text NOT NULL,
  spend_micros  bigint NOT NULL CHECK (spend_micros >= 0),
  spend_cents   bigint NOT NULL CHECK (spend_cents >= 0),
  PRIMARY KEY (ad_account_id, date, campaign_id, ad_set_id),
  FOREIGN KEY (hub_id, ad_account_id) REFERENCES ad_accounts (hub_id, id)
);

CREATE TABLE ad_attribution_mappings (
  hub_id        text COLLATE "C" NOT NULL,
  ad_account_id text COLLATE "C" NOT NULL,
  level         text NOT NULL CHECK (level IN ('campaign', 'ad_set')),
  external_id   text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (ad_account_id, level, external_id),
  FOREIGN KEY (hub_id, ad_account_id) REFERENCES ad_accounts (hub_id, id),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);

-- Report versions move only when a figure does. An UPDATE statement bumped every hub it touched,
-- even when it rewrote rows as they were; now a hub is bumped only for rows whose old and new
-- values differ (the transition tables compared), and ad accounts only for what the report is
-- built from (creation, removal, a new name), never for the sync loop's lease and state writes.
CREATE OR REPLACE FUNCTION bump_report_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Only the branch taken is planned, so each names the transition tables its trigger has.
  IF TG_OP = 'INSERT' THEN
    UPDATE hubs SET report_version = report_version + 1 WHERE id IN (SELECT hub_id FROM new_rows);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE hubs SET report_version = report_version + 1 WHERE id IN (SELECT hub_id FROM old_rows);
  ELSE
    UPDATE hubs SET report_version = report_version + 1
     WHERE id IN (SELECT hub_id FROM (SELECT * FROM new_rows EXCEPT ALL SELECT * FROM old_rows) changed
                  UNION
                  SELECT hub_id FROM (SELECT * FROM old_rows EXCEPT ALL SELECT * FROM new_rows) changed);
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER spend_ins ON spend;
DROP TRIGGER spend_upd ON spend;
DROP TRIGGER spend_del ON spend;
DROP TRIGGER workspaces_ins ON workspaces;
DROP TRIGGER workspaces_upd ON workspaces;
DROP TRIGGER workspaces_del ON workspaces;
DROP TRIGGER workspace_fields_ins ON workspace_fields;
DROP TRIGGER workspace_fields_upd ON workspace_fields;
DROP TRIGGER workspace_fields_del ON workspace_fields;

CREATE TRIGGER spend_ins AFTER INSERT ON spend REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER spend_upd AFTER UPDATE ON spend REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER spend_del AFTER DELETE ON spend REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspaces_ins AFTER INSERT ON workspaces REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspaces_upd AFTER UPDATE ON workspaces REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspaces_del AFTER DELETE ON workspaces REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspace_fields_ins AFTER INSERT ON workspace_fields REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspace_fields_upd AFTER UPDATE ON workspace_fields REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspace_fields_del AFTER DELETE ON workspace_fields REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();

-- Ad accounts: their creation, removal and name; the sync columns the loop writes every run do not count.
CREATE FUNCTION bump_report_version_ad_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE hubs SET report_version = report_version + 1 WHERE id IN (SELECT hub_id FROM new_rows);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE hubs SET report_version = report_version + 1 WHERE id IN (SELECT hub_id FROM old_rows);
  ELSE
    UPDATE hubs SET report_version = report_version + 1
     WHERE id IN (SELECT n.hub_id FROM new_rows n JOIN old_rows o ON o.id = n.id
                   WHERE (n.hub_id, n.name, n.platform) IS DISTINCT FROM (o.hub_id, o.name, o.platform));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER ad_accounts_report_ins AFTER INSERT ON ad_accounts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version_ad_accounts();
CREATE TRIGGER ad_accounts_report_upd AFTER UPDATE ON ad_accounts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version_ad_accounts();
CREATE TRIGGER ad_accounts_report_del AFTER DELETE ON ad_accounts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version_ad_accounts();
