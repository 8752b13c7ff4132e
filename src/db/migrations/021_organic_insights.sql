-- Organic insights synced from the networks (issue 23): each publication on a connected Facebook
-- Page or Instagram account gets its lifetime figures read on a decaying schedule after publishing
-- (src/domain/organic/insights-schedule.ts), kept here per post and channel. /analytics/organic
-- sums them per workspace, UTC day of publication and platform, beside the imported organic_metrics
-- rows: for a workspace, day and platform that has an imported row, the import is the figure and
-- synced rows of that day are not added to it (docs/channels.md, "Organic insights").
CREATE TABLE organic_post_insights (
  hub_id          text COLLATE "C" NOT NULL,
  workspace_id    text COLLATE "C" NOT NULL,
  post_id         text COLLATE "C" NOT NULL,
  channel_id      text COLLATE "C" NOT NULL,
  platform        text NOT NULL CHECK (platform IN ('facebook', 'instagram')),
  -- The network's id of the publication (a Page post id, an Instagram media id).
  external_id     text NOT NULL CHECK (length(external_id) BETWEEN 1 AND 300),
  published_at    timestamptz NOT NULL,
  -- The UTC day of publication: the day a post's lifetime figures count on.
  date            date NOT NULL,
  has_figures     boolean NOT NULL DEFAULT false,
  impressions     bigint NOT NULL DEFAULT 0 CHECK (impressions >= 0),
  reach           bigint NOT NULL DEFAULT 0 CHECK (reach >= 0),
  likes           bigint NOT NULL DEFAULT 0 CHECK (likes >= 0),
  comments        bigint NOT NULL DEFAULT 0 CHECK (comments >= 0),
  shares          bigint NOT NULL DEFAULT 0 CHECK (shares >= 0),
  saves           bigint NOT NULL DEFAULT 0 CHECK (saves >= 0),
  clicks          bigint NOT NULL DEFAULT 0 CHECK (clicks >= 0),
  engagements     bigint NOT NULL DEFAULT 0 CHECK (engagements >= 0),
  fetches         integer NOT NULL DEFAULT 0 CHECK (fetches >= 0),
  fetched_at      timestamptz,
  -- When the figures are read next; null: the schedule is over.
  next_fetch_at   timestamptz,
  lease_owner     text,
  lease_until     timestamptz,
  failure_kind    text,
  failure_message text,
  failure_code    text,
  failed_at       timestamptz,
  PRIMARY KEY (post_id, channel_id),
  FOREIGN KEY (post_id, channel_id) REFERENCES post_deliveries (post_id, channel_id) ON DELETE CASCADE,
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);
-- The sync's claim: due rows, oldest first.
CREATE INDEX organic_post_insights_due_idx ON organic_post_insights (next_fetch_at) WHERE next_fetch_at IS NOT NULL;
-- The analytics' read: a hub's days.
CREATE INDEX organic_post_insights_hub_date_idx ON organic_post_insights (hub_id, date) WHERE has_figures;
