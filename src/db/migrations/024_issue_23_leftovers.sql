-- Issue 23's leftovers.
--
-- Channel connections no channel references any more are deleted with their sealed tokens: Meta
-- sign-ins kept as connections before the admin chose anything (the chooser now holds the token in
-- the session-bound pending store), and the connections a reconnect left behind. From now on the
-- transaction that moves channels to a new connection deletes the one it leaves unused.
DELETE FROM channel_connections k
 WHERE NOT EXISTS (SELECT 1 FROM social_channels c WHERE c.hub_id = k.hub_id AND c.connection_id = k.id);

-- A send that published nothing and may succeed later (the network's transient error, a failure to
-- reach it before anything was sent, an unconfirmed send a lookup found never landed) is sent again
-- on a backoff, a bounded number of times: each delivery counts its sends after the first.
ALTER TABLE post_deliveries ADD COLUMN IF NOT EXISTS retries smallint NOT NULL DEFAULT 0 CHECK (retries >= 0);
