-- Google reviews that sync by themselves (issue 23): every review of each connected Business
-- Profile location, and each location's sync state (the row is the job: the loop claims it with
-- FOR UPDATE SKIP LOCKED under a lease). A synced workspace's review_days are derived from its
-- reviews in the transaction that writes them, so /analytics/google-reviews reads synced data
-- exactly as it reads imported data.

CREATE TABLE google_reviews (
  hub_id        text COLLATE "C" NOT NULL,
  workspace_id  text COLLATE "C" NOT NULL,
  channel_id    text COLLATE "C" NOT NULL,
  review_id     text COLLATE "C" NOT NULL CHECK (length(review_id) BETWEEN 1 AND 300),
  star_rating   smallint NOT NULL CHECK (star_rating BETWEEN 1 AND 5),
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  replied       boolean NOT NULL,
  PRIMARY KEY (channel_id, review_id),
  FOREIGN KEY (hub_id, workspace_id, channel_id) REFERENCES social_channels (hub_id, workspace_id, id) ON DELETE CASCADE
);
-- A workspace's reviews by UTC day of receipt: what review_days are recomputed from.
CREATE INDEX google_reviews_day_idx ON google_reviews (hub_id, workspace_id, ((created_at AT TIME ZONE 'UTC')::date));

CREATE TABLE review_syncs (
  channel_id      text COLLATE "C" PRIMARY KEY REFERENCES social_channels (id) ON DELETE CASCADE,
  hub_id          text COLLATE "C" NOT NULL REFERENCES hubs (id),
  -- The newest updateTime stored: an incremental read stops below it.
  high_water      timestamptz,
  -- The last read of every review (deleted ones are only seen by a full read).
  last_full_at    timestamptz,
  last_synced_at  timestamptz,
  next_sync_at    timestamptz NOT NULL,
  lease_until     timestamptz,
  lease_owner     text,
  failure_kind    text,
  failure_message text,
  failure_code    text,
  failing_since   timestamptz,
  failure_count   integer NOT NULL DEFAULT 0 CHECK (failure_count >= 0)
);
CREATE INDEX review_syncs_due_idx ON review_syncs (next_sync_at);
