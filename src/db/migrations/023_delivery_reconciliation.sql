-- Exactly-once publishing without idempotency keys (issue 23): a post that has begun publishing
-- can wait without a claim (a throttled channel, an unconfirmed delivery waiting to be looked up),
-- until `retry_at`; each delivery counts the lookups that could not tell (`checks`), to back off
-- and finally give up as "could not confirm" rather than send blindly.
ALTER TABLE posts ADD COLUMN retry_at timestamptz;
-- A publishing post is held by a publisher (claimed) or waits for one (retry_at); no other post is either.
ALTER TABLE posts DROP CONSTRAINT posts_check3;
ALTER TABLE posts
  ADD CONSTRAINT posts_claim_check CHECK ((claimed_at IS NULL) = (claimed_by IS NULL)),
  ADD CONSTRAINT posts_publishing_check CHECK (
    CASE WHEN status = 'publishing' THEN claimed_at IS NOT NULL OR retry_at IS NOT NULL
         ELSE claimed_at IS NULL AND retry_at IS NULL END);
-- Publishing posts no publisher holds, by when they want the publisher back.
CREATE INDEX posts_retry_idx ON posts (retry_at) WHERE status = 'publishing' AND claimed_at IS NULL;

ALTER TABLE post_deliveries ADD COLUMN checks smallint NOT NULL DEFAULT 0 CHECK (checks >= 0);

-- The sandbox connector's log no longer carries idempotency keys (migration 020 dropped their index).
ALTER TABLE sandbox_publications DROP COLUMN idempotency_key, DROP COLUMN requests;
