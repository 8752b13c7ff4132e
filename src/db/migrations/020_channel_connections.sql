-- Organic channels on the real networks (issue 23): connections to Meta (Pages, Instagram) and
-- Google Business Profile with sealed tokens, each channel's way in and status, and the
-- delivery states of exactly-once publishing.

CREATE TABLE channel_connections (
  id               text COLLATE "C" PRIMARY KEY,
  hub_id           text COLLATE "C" NOT NULL REFERENCES hubs (id),
  platform         text NOT NULL CHECK (platform IN ('meta', 'google_business')),
  label            text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
  -- Meta: the long-lived user token; Google: the refresh token. AES-256-GCM under the server's
  -- secrets key with the connection id as additional data (src/platform/sealing.ts).
  token_sealed     bytea NOT NULL,
  token_expires_at timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (hub_id, id)
);

-- A channel connected to a network: its connection, the platform's id for it (a Page id, an
-- Instagram user id, a Business Profile `accounts/…/locations/…` name), its own token where the
-- platform gives one (a Page token, sealed with the channel id as additional data), and what the
-- admin sees: last publish, last failure in the platform's words. Channels without a connection
-- (made through the API, imported) publish to the sandbox connector as before.
ALTER TABLE social_channels
  ADD COLUMN connection_id     text COLLATE "C",
  ADD COLUMN external_id       text COLLATE "C" CHECK (length(external_id) BETWEEN 1 AND 300),
  ADD COLUMN token_sealed      bytea,
  ADD COLUMN token_expires_at  timestamptz,
  ADD COLUMN last_published_at timestamptz,
  ADD COLUMN failure_kind      text,
  ADD COLUMN failure_message   text,
  ADD COLUMN failure_code      text,
  ADD COLUMN failing_since     timestamptz,
  ADD FOREIGN KEY (hub_id, connection_id) REFERENCES channel_connections (hub_id, id),
  ADD CHECK (connection_id IS NULL OR external_id IS NOT NULL);
CREATE UNIQUE INDEX social_channels_external_idx ON social_channels (hub_id, platform, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX social_channels_connection_idx ON social_channels (connection_id) WHERE connection_id IS NOT NULL;

-- Delivery states: pending (queued) → publishing (the request may be on its way) → published |
-- failed | unconfirmed (the request may have reached the platform but no answer did: never sent
-- again blindly; reconciled by looking the publication up). `attempt_started_at` is when the
-- current send began, the lower bound of that lookup.
ALTER TABLE post_deliveries DROP CONSTRAINT post_deliveries_status_check;
ALTER TABLE post_deliveries DROP CONSTRAINT post_deliveries_check2;
ALTER TABLE post_deliveries
  ADD CONSTRAINT post_deliveries_status_check CHECK (status IN ('pending', 'publishing', 'published', 'failed', 'unconfirmed')),
  ADD CONSTRAINT post_deliveries_delivered_check CHECK ((status IN ('published', 'failed')) = (delivered_at IS NOT NULL)),
  ADD COLUMN attempt_started_at timestamptz,
  ADD COLUMN failure_kind       text,
  ADD COLUMN platform_message   text,
  ADD COLUMN platform_code      text,
  ADD COLUMN url                text CHECK (length(url) <= 2000),
  ADD CHECK (status NOT IN ('publishing', 'unconfirmed') OR attempt_started_at IS NOT NULL);
-- Unconfirmed deliveries, oldest first, for the reconciler.
CREATE INDEX post_deliveries_unconfirmed_idx ON post_deliveries (attempt_started_at) WHERE status IN ('publishing', 'unconfirmed');

-- The sandbox connector behaves as the networks do: no idempotency key, so a repeated call
-- publishes again (and shows as a second row) rather than being absorbed.
DROP INDEX sandbox_publications_idempotency_idx;
