-- Google Ads and ChatGPT Ads on the sync engine (issue 22). A Google Ads account may be reached
-- only through a manager account: its customer id is sent as `login-customer-id` on every call,
-- so it is kept with the account (null: the credential reaches the account directly).
ALTER TABLE ad_accounts ADD COLUMN access_via text COLLATE "C" CHECK (length(access_via) BETWEEN 1 AND 64);
