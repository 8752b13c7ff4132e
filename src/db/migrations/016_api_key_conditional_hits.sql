-- Conditional hits: a Hub API request answered 304 Not Modified (the tool already had the current
-- data) is still one of its key's requests, in request_count, and is also counted here: it is free
-- against the rate limit, and a hub admin sees how much of a tool's polling found nothing new.
-- Added by the same batched usage flush as request_count. A constant default: no table rewrite.
ALTER TABLE api_key_usage ADD COLUMN not_modified_count bigint NOT NULL DEFAULT 0;
ALTER TABLE api_key_daily_usage ADD COLUMN not_modified_count bigint NOT NULL DEFAULT 0;
