-- What a network prepared for a delivery whose call was given up before anything was published (an
-- Instagram container still processing a reel at the publisher's deadline): its next attempt goes
-- on from it instead of starting again. Opaque to the publisher; the connector wrote it. Cleared
-- when the delivery is marked for its next attempt (the attempt holds it in memory).
ALTER TABLE post_deliveries ADD COLUMN IF NOT EXISTS prepared text CHECK (length(prepared) <= 200);
