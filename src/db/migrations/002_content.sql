-- Content of the main API: social channels, posts with their media and per-channel deliveries,
-- the media library, organic and paid performance per day, Google review days, the hub's CPM per
-- platform, Idempotency-Key records, and the sandbox connector's log of publications.
-- Tenancy is structural as in 001: every row carries hub_id (and workspace_id), and composite
-- foreign keys make a row that points into another hub or workspace impossible to store.

-- A generic updated_at keeper: millisecond precision, strictly increasing per row (see 001).
CREATE FUNCTION touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW IS DISTINCT FROM OLD THEN
    NEW.updated_at := greatest(date_trunc('milliseconds', clock_timestamp()),
                               OLD.updated_at + interval '1 millisecond');
  END IF;
  RETURN NEW;
END $$;

CREATE TABLE social_channels (
  id            text COLLATE "C" PRIMARY KEY,
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  platform      text NOT NULL CHECK (platform IN ('instagram', 'facebook', 'linkedin', 'x', 'tiktok', 'google_business')),
  name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  handle        text CHECK (length(handle) BETWEEN 1 AND 200),
  -- A disconnected channel (expired or revoked platform token) receives nothing until reconnected.
  connected     boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id),
  UNIQUE (hub_id, workspace_id, id)
);
CREATE INDEX social_channels_hub_idx ON social_channels (hub_id, created_at, id);
CREATE INDEX social_channels_workspace_idx ON social_channels (hub_id, workspace_id, created_at, id);

CREATE TABLE media_assets (
  id            text COLLATE "C" PRIMARY KEY,
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('image', 'video')),
  -- Sniffed from the bytes at upload; the declared type is never trusted.
  content_type  text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/webp', 'image/gif', 'video/mp4', 'video/quicktime')),
  filename      text NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
  byte_size     bigint NOT NULL CHECK (byte_size > 0),
  width         integer NOT NULL CHECK (width > 0),
  height        integer NOT NULL CHECK (height > 0),
  duration_ms   integer CHECK (duration_ms >= 0),
  sha256        bytea NOT NULL CHECK (length(sha256) = 32),
  -- Where the MediaStore keeps the bytes; null for metadata imported from another system.
  storage_key   text UNIQUE,
  created_by    text COLLATE "C" REFERENCES users (id),
  created_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id),
  UNIQUE (hub_id, workspace_id, id),
  CHECK ((kind = 'image') = (content_type LIKE 'image/%')),
  CHECK (byte_size <= CASE kind WHEN 'image' THEN 10485760 ELSE 209715200 END),
  CHECK (kind = 'video' OR duration_ms IS NULL)
);
CREATE INDEX media_assets_hub_idx ON media_assets (hub_id, created_at, id);
CREATE INDEX media_assets_workspace_idx ON media_assets (hub_id, workspace_id, created_at, id);

CREATE TABLE posts (
  id            text COLLATE "C" PRIMARY KEY,
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  text          text NOT NULL CHECK (length(text) <= 63206),
  status        text NOT NULL CHECK (status IN ('draft', 'scheduled', 'publishing', 'published', 'failed')),
  scheduled_at  timestamptz,
  published_at  timestamptz,
  error         text,
  -- Publisher bookkeeping: claims so far, and the current claim (only while publishing).
  attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  claimed_at    timestamptz,
  claimed_by    text,
  created_by    text COLLATE "C" REFERENCES users (id),
  created_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  -- Where the post sits on the calendar; lists are ordered and filtered by it. It does not move
  -- when a scheduled post is published, so paging stays stable while the publisher works.
  calendar_at   timestamptz GENERATED ALWAYS AS (coalesce(scheduled_at, published_at, created_at)) STORED,
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id),
  UNIQUE (hub_id, workspace_id, id),
  CHECK (status NOT IN ('scheduled', 'publishing') OR scheduled_at IS NOT NULL),
  CHECK ((status = 'published') = (published_at IS NOT NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL)),
  CHECK ((status = 'publishing') = (claimed_at IS NOT NULL AND claimed_by IS NOT NULL))
);
-- Keyset paging on (calendar_at, id): the hub, a workspace, a status, and both.
CREATE INDEX posts_hub_calendar_idx ON posts (hub_id, calendar_at, id);
CREATE INDEX posts_workspace_calendar_idx ON posts (hub_id, workspace_id, calendar_at, id);
CREATE INDEX posts_status_calendar_idx ON posts (hub_id, status, calendar_at, id);
CREATE INDEX posts_workspace_status_calendar_idx ON posts (hub_id, workspace_id, status, calendar_at, id);
-- The publisher's two claims: due scheduled posts, and publishing posts whose lease ran out.
CREATE INDEX posts_due_idx ON posts (scheduled_at) WHERE status = 'scheduled';
CREATE INDEX posts_lease_idx ON posts (claimed_at) WHERE status = 'publishing';
CREATE TRIGGER posts_touch BEFORE UPDATE ON posts FOR EACH ROW EXECUTE FUNCTION touch_updated_at();

-- A published post cannot be edited (domain rule), enforced here too so no code path can.
CREATE FUNCTION posts_keep_published() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status = 'published' AND (NEW.text, NEW.status, NEW.scheduled_at, NEW.published_at, NEW.workspace_id)
                       IS DISTINCT FROM (OLD.text, OLD.status, OLD.scheduled_at, OLD.published_at, OLD.workspace_id) THEN
    RAISE EXCEPTION 'post % is published and cannot be edited', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER posts_keep_published BEFORE UPDATE ON posts FOR EACH ROW EXECUTE FUNCTION posts_keep_published();

-- A post's media in order: up to 10 images or one video (the video rule is the domain's).
CREATE TABLE post_media (
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  post_id       text COLLATE "C" NOT NULL,
  media_id      text COLLATE "C" NOT NULL,
  position      smallint NOT NULL CHECK (position BETWEEN 0 AND 9),
  PRIMARY KEY (post_id, position),
  UNIQUE (post_id, media_id),
  FOREIGN KEY (hub_id, workspace_id, post_id) REFERENCES posts (hub_id, workspace_id, id) ON DELETE CASCADE,
  -- Media from the post's own workspace only.
  FOREIGN KEY (hub_id, workspace_id, media_id) REFERENCES media_assets (hub_id, workspace_id, id)
);
CREATE INDEX post_media_media_idx ON post_media (media_id);

-- One row per target channel of a post: the target (in the caller's order) and its delivery.
-- The primary key makes "exactly once per post and channel" structural.
CREATE TABLE post_deliveries (
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  post_id       text COLLATE "C" NOT NULL,
  channel_id    text COLLATE "C" NOT NULL,
  position      smallint NOT NULL CHECK (position >= 0),
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'published', 'failed')),
  external_id   text,
  error         text,
  delivered_at  timestamptz,
  PRIMARY KEY (post_id, channel_id),
  UNIQUE (post_id, position),
  FOREIGN KEY (hub_id, workspace_id, post_id) REFERENCES posts (hub_id, workspace_id, id) ON DELETE CASCADE,
  -- Channels of the post's own workspace only.
  FOREIGN KEY (hub_id, workspace_id, channel_id) REFERENCES social_channels (hub_id, workspace_id, id),
  CHECK ((status = 'published') = (external_id IS NOT NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL)),
  CHECK ((status = 'pending') = (delivered_at IS NULL))
);
CREATE INDEX post_deliveries_channel_idx ON post_deliveries (channel_id);

-- The sandbox connector's "platform": every publication it was asked to make, one row per call
-- (deliberately not unique, so a double publication would show).
CREATE TABLE sandbox_publications (
  id            text COLLATE "C" PRIMARY KEY,
  hub_id        text COLLATE "C" NOT NULL,
  post_id       text COLLATE "C" NOT NULL,
  channel_id    text COLLATE "C" NOT NULL,
  platform      text NOT NULL,
  text          text NOT NULL,
  media_count   integer NOT NULL,
  published_at  timestamptz NOT NULL
);
CREATE INDEX sandbox_publications_post_idx ON sandbox_publications (post_id, channel_id);

-- Organic performance per workspace, UTC day and platform, as the platforms report it.
CREATE TABLE organic_metrics (
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  date          date NOT NULL,
  platform      text NOT NULL CHECK (platform IN ('instagram', 'facebook', 'linkedin', 'x', 'tiktok', 'google_business')),
  posts         integer NOT NULL CHECK (posts >= 0),
  impressions   bigint NOT NULL CHECK (impressions >= 0),
  reach         bigint NOT NULL CHECK (reach >= 0),
  likes         bigint NOT NULL CHECK (likes >= 0),
  comments      bigint NOT NULL CHECK (comments >= 0),
  shares        bigint NOT NULL CHECK (shares >= 0),
  saves         bigint NOT NULL CHECK (saves >= 0),
  PRIMARY KEY (hub_id, workspace_id, date, platform),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);
-- Hub-wide reports read a date range from the index alone.
CREATE INDEX organic_metrics_hub_date_idx ON organic_metrics (hub_id, date)
  INCLUDE (workspace_id, platform, posts, impressions, reach, likes, comments, shares, saves);

-- The hub's CPM per platform (cents per 1,000 impressions) for earned media value.
CREATE TABLE hub_cpm (
  hub_id        text COLLATE "C" NOT NULL REFERENCES hubs (id),
  platform      text NOT NULL CHECK (platform IN ('instagram', 'facebook', 'linkedin', 'x', 'tiktok', 'google_business')),
  cpm_cents     integer NOT NULL CHECK (cpm_cents >= 0),
  PRIMARY KEY (hub_id, platform)
);

-- Paid performance per workspace, UTC day and campaign, as the ad platforms report it.
CREATE TABLE paid_metrics (
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  date          date NOT NULL,
  platform      text NOT NULL CHECK (platform IN ('meta', 'google_ads', 'chatgpt_ads')),
  campaign_id   text COLLATE "C" NOT NULL CHECK (length(campaign_id) BETWEEN 1 AND 200),
  campaign_name text NOT NULL CHECK (length(campaign_name) BETWEEN 1 AND 200),
  spend_cents   bigint NOT NULL CHECK (spend_cents >= 0),
  impressions   bigint NOT NULL CHECK (impressions >= 0),
  clicks        bigint NOT NULL CHECK (clicks >= 0),
  results       bigint NOT NULL CHECK (results >= 0),
  PRIMARY KEY (hub_id, workspace_id, date, platform, campaign_id),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id)
);
CREATE INDEX paid_metrics_hub_date_idx ON paid_metrics (hub_id, date)
  INCLUDE (workspace_id, platform, campaign_id, spend_cents, impressions, clicks, results);

-- Google reviews per workspace and UTC day: reviews received that day by star rating, how many
-- of them have a reply, and running totals through that day (inclusive). The totals are kept by
-- the one write path (review.repository.ts saveReviewDays), so any range is exact with two
-- index lookups per workspace: totals(to) − totals(day before from).
CREATE TABLE review_days (
  hub_id          text COLLATE "C" NOT NULL,
  workspace_id    text COLLATE "C" NOT NULL,
  date            date NOT NULL,
  new_1           integer NOT NULL CHECK (new_1 >= 0),
  new_2           integer NOT NULL CHECK (new_2 >= 0),
  new_3           integer NOT NULL CHECK (new_3 >= 0),
  new_4           integer NOT NULL CHECK (new_4 >= 0),
  new_5           integer NOT NULL CHECK (new_5 >= 0),
  responded       integer NOT NULL CHECK (responded >= 0),
  total_1         bigint NOT NULL,
  total_2         bigint NOT NULL,
  total_3         bigint NOT NULL,
  total_4         bigint NOT NULL,
  total_5         bigint NOT NULL,
  total_responded bigint NOT NULL,
  PRIMARY KEY (hub_id, workspace_id, date),
  FOREIGN KEY (hub_id, workspace_id) REFERENCES workspaces (hub_id, id),
  CHECK (responded <= new_1 + new_2 + new_3 + new_4 + new_5),
  CHECK (total_1 >= new_1 AND total_2 >= new_2 AND total_3 >= new_3 AND total_4 >= new_4 AND total_5 >= new_5),
  CHECK (total_responded >= responded AND total_responded <= total_1 + total_2 + total_3 + total_4 + total_5)
);

-- Idempotency-Key records of the main API's POSTs: per user, OAuth client and key, the request's
-- fingerprint and the first (successful) response body, replayed for 24 hours. The row is
-- inserted before the work, in the work's transaction, so a concurrent retry waits for the first
-- to finish; response_body is null only inside that transaction.
CREATE TABLE idempotency_keys (
  user_id         text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  client_id       text COLLATE "C" NOT NULL,
  key             text COLLATE "C" NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  request_hash    bytea NOT NULL CHECK (length(request_hash) = 32),
  response_body   jsonb,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (user_id, client_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
