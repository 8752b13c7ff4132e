-- Key lifecycle: an optional expiry, rolling (a new secret for the same name and scope while the
-- old one stays valid for a grace period), and request counts per key and UTC day.
-- Expiry is a time on the key's row that the verdict lookup returns: a key stops working at that
-- instant with no job to run. A rolled key keeps its row, names its successor, and expires when
-- its grace period ends.
ALTER TABLE api_keys
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN replaced_by text COLLATE "C" REFERENCES api_keys (id),
  ADD CONSTRAINT api_keys_rolled_expires CHECK (replaced_by IS NULL OR expires_at IS NOT NULL);

-- Requests per key and UTC day, added by the batched usage flush (the same statement that adds
-- api_key_usage). The flush also deletes a flushed key's days past the retention, so a key holds
-- at most that many rows without a job: rows are only added where they are pruned.
CREATE TABLE api_key_daily_usage (
  key_id text COLLATE "C" NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  day date NOT NULL,
  request_count bigint NOT NULL,
  PRIMARY KEY (key_id, day)
) WITH (fillfactor = 70); -- room for in-page (HOT) updates of today's row
