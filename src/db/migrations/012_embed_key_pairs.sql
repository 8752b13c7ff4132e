-- Embed keys become Ed25519 key pairs: the customer keeps the private key and
-- the table holds only the 32-byte public key, so reading it is not enough to sign an embed token.
-- Embed keys made before keep their key_hash (legacy HMAC tokens) until they are revoked.
ALTER TABLE api_keys ALTER COLUMN key_hash DROP NOT NULL;
ALTER TABLE api_keys ADD COLUMN public_key bytea;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_one_secret_form CHECK (
  (key_hash IS NULL) <> (public_key IS NULL)
  AND (public_key IS NULL OR (scope = 'embed' AND length(public_key) = 32)));
