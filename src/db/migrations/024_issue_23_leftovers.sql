-- Issue 23's leftovers.
--
-- Channel connections no channel references any more are deleted with their sealed tokens: Meta
-- sign-ins kept as connections before the admin chose anything (the chooser now holds the token in
-- the session-bound pending store), and the connections a reconnect left behind. From now on the
-- transaction that moves channels to a new connection deletes the one it leaves unused.
DELETE FROM channel_connections k
 WHERE NOT EXISTS (SELECT 1 FROM social_channels c WHERE c.hub_id = k.hub_id AND c.connection_id = k.id);
