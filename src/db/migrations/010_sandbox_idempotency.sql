-- The sandbox connector honours idempotency keys as the real networks do (Stripe, Meta): a call
-- that repeats a key which already published something publishes nothing and answers with the
-- first result. Keys are scoped to the hub (a platform scopes them to the account). `requests`
-- counts every call made under the key, so re-sends after a crash show beside publications.
ALTER TABLE sandbox_publications
  ADD COLUMN idempotency_key text,
  ADD COLUMN requests integer NOT NULL DEFAULT 1 CHECK (requests >= 1);
CREATE UNIQUE INDEX sandbox_publications_idempotency_idx ON sandbox_publications (hub_id, idempotency_key);
