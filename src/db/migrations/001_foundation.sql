-- Foundation: tenancy (accounts → hubs → workspaces), users, playbooks and opt-ins,
-- ad accounts and daily spend, Hub API keys. Every id compares byte by byte (COLLATE "C"),
-- because every order the API promises is (timestamp, id) with ids compared that way.

CREATE TABLE accounts (
  id          text COLLATE "C" PRIMARY KEY,
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  plan        text NOT NULL DEFAULT 'standard' CHECK (plan IN ('standard', 'partner')),
  api_access  boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE hubs (
  id          text COLLATE "C" PRIMARY KEY,
  account_id  text COLLATE "C" NOT NULL REFERENCES accounts (id),
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  suspended   boolean NOT NULL DEFAULT false,
  -- Bumped by statement triggers whenever data behind the spend report changes, so a cached
  -- report can be validated with one indexed read.
  report_version bigint NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX hubs_account_idx ON hubs (account_id, id);

CREATE TABLE workspaces (
  id          text COLLATE "C" PRIMARY KEY,
  hub_id      text COLLATE "C" NOT NULL REFERENCES hubs (id),
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  timezone    text NOT NULL DEFAULT 'UTC',
  -- Custom field values by field key; keys must be fields defined by the hub (checked on write).
  fields      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(fields) = 'object'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (hub_id, id)
);

CREATE TABLE workspace_fields (
  hub_id      text COLLATE "C" NOT NULL REFERENCES hubs (id),
  key         text COLLATE "C" NOT NULL CHECK (key ~ '^[A-Za-z0-9_-]{1,64}$'),
  label       text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
  archived    boolean NOT NULL DEFAULT false,
  PRIMARY KEY (hub_id, key)
);

CREATE TABLE users (
  id            text COLLATE "C" PRIMARY KEY,
  account_id    text COLLATE "C" NOT NULL REFERENCES accounts (id),
  email         text NOT NULL CHECK (email = lower(email) AND email LIKE '%_@_%'),
  password_hash text NOT NULL,
  firstname     text NOT NULL,
  lastname      text NOT NULL,
  is_staff      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (email)
);

-- A user's role in a hub; a member may be pinned to one workspace of it.
CREATE TABLE memberships (
  user_id       text COLLATE "C" NOT NULL REFERENCES users (id),
  hub_id        text COLLATE "C" NOT NULL REFERENCES hubs (id),
  role          text NOT NULL CHECK (role IN ('hub_admin', 'member')),
  workspace_id  text COLLATE "C",
  PRIMARY KEY (user_id, hub_id),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);

CREATE TABLE playbooks (
  id          text COLLATE "C" PRIMARY KEY,
  hub_id      text COLLATE "C" NOT NULL REFERENCES hubs (id),
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  solutions   text[] NOT NULL CHECK (
                cardinality(solutions) >= 1
                AND solutions <@ ARRAY['meta', 'google_ads', 'chatgpt_ads', 'organic_social']),
  -- Variant dimensions and their options, e.g. {"audience": ["Families", "Seniors"]}.
  variants    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(variants) = 'object'),
  -- Questions asked at opt-in: [{"question": …, "type": "short_answer"|…, "required": bool, "options": […]}].
  questions   jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(questions) = 'array'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (hub_id, id)
);

CREATE TABLE opt_ins (
  id            text COLLATE "C" PRIMARY KEY,
  hub_id        text COLLATE "C" NOT NULL,
  playbook_id   text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  status        text NOT NULL CHECK (status IN (
                  'pending', 'pending_billing', 'in_review', 'deploying', 'active',
                  'partially-deployed', 'failed', 'cleanup_failed', 'cancelling', 'cancelled',
                  'completed', 'paused', 'questions_only')),
  opted_in_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  budget_cents  bigint CHECK (budget_cents >= 0),
  budget_type   text CHECK (budget_type IN ('lifetime', 'daily')),
  variant       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(variant) = 'object'),
  responses     jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(responses) = 'array'),
  -- Tenancy is structural: the playbook and the workspace must both belong to the row's hub.
  FOREIGN KEY (hub_id, playbook_id) REFERENCES playbooks (hub_id, id),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);
-- Keyset paging (updatedAt, id) for the hub, and the same per playbook and per status.
CREATE INDEX opt_ins_hub_updated_idx ON opt_ins (hub_id, updated_at, id);
CREATE INDEX opt_ins_hub_playbook_updated_idx ON opt_ins (hub_id, playbook_id, updated_at, id);
CREATE INDEX opt_ins_hub_status_updated_idx ON opt_ins (hub_id, status, updated_at, id);
-- Summary: opt-ins by day, with the workspace for distinct counts, without touching the heap.
CREATE INDEX opt_ins_hub_opted_in_idx ON opt_ins (hub_id, opted_in_at) INCLUDE (workspace_id);

-- updatedAt is maintained by the database on every change, strictly increasing per row and at
-- millisecond precision (what the API shows), so a changed row always moves behind a cursor.
CREATE FUNCTION opt_ins_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW IS DISTINCT FROM OLD THEN
    NEW.updated_at := greatest(date_trunc('milliseconds', clock_timestamp()),
                               OLD.updated_at + interval '1 millisecond');
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER opt_ins_touch BEFORE UPDATE ON opt_ins FOR EACH ROW EXECUTE FUNCTION opt_ins_touch();

CREATE TABLE ad_accounts (
  id              text COLLATE "C" PRIMARY KEY,
  hub_id          text COLLATE "C" NOT NULL REFERENCES hubs (id),
  platform        text NOT NULL CHECK (platform IN ('meta', 'google_ads', 'chatgpt_ads')),
  name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  sync_state      text NOT NULL DEFAULT 'idle' CHECK (sync_state IN ('idle', 'syncing', 'failed')),
  -- The last completed sync; null when none has completed.
  last_synced_at  timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (hub_id, id)
);

-- Daily spend per ad account and workspace; workspace_id null = unattributed spend.
CREATE TABLE spend (
  hub_id         text COLLATE "C" NOT NULL,
  ad_account_id  text COLLATE "C" NOT NULL,
  workspace_id   text COLLATE "C",
  date           date NOT NULL,
  spend_cents    bigint NOT NULL CHECK (spend_cents >= 0),
  FOREIGN KEY (hub_id, ad_account_id) REFERENCES ad_accounts (hub_id, id),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);
CREATE UNIQUE INDEX spend_line_idx ON spend (ad_account_id, date, (coalesce(workspace_id, '')));
-- The spend report scans a hub's date range and sums by workspace from the index alone.
CREATE INDEX spend_hub_date_idx ON spend (hub_id, date) INCLUDE (workspace_id, spend_cents);

CREATE TABLE api_keys (
  id            text COLLATE "C" PRIMARY KEY,
  hub_id        text COLLATE "C" NOT NULL REFERENCES hubs (id),
  name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  -- Keys created before scopes existed are embed keys; new keys choose explicitly (read by default).
  scope         text NOT NULL DEFAULT 'embed' CHECK (scope IN ('read', 'embed')),
  -- The visible start of the key (prefix and four characters), for recognising it in lists.
  start         text NOT NULL,
  -- SHA-256 of the whole key; the key itself is never stored.
  key_hash      bytea NOT NULL UNIQUE,
  request_count bigint NOT NULL DEFAULT 0,
  last_used_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz
);
CREATE INDEX api_keys_hub_idx ON api_keys (hub_id, created_at, id);

-- Report versions: any statement that changes spend, workspaces, their fields or ad accounts
-- bumps the version of each hub it touched (statement triggers, so a million-row import costs
-- one update per hub, not one per row).
CREATE FUNCTION bump_report_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE hubs SET report_version = report_version + 1
   WHERE id IN (SELECT hub_id FROM changed_rows);
  RETURN NULL;
END $$;

CREATE TRIGGER spend_ins AFTER INSERT ON spend REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER spend_upd AFTER UPDATE ON spend REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER spend_del AFTER DELETE ON spend REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspaces_ins AFTER INSERT ON workspaces REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspaces_upd AFTER UPDATE ON workspaces REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspaces_del AFTER DELETE ON workspaces REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspace_fields_ins AFTER INSERT ON workspace_fields REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspace_fields_upd AFTER UPDATE ON workspace_fields REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
CREATE TRIGGER workspace_fields_del AFTER DELETE ON workspace_fields REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_report_version();
