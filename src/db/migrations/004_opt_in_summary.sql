-- /opt-in-summary counts a hub's active opt-ins on every request: a partial index makes that a
-- read of the active rows only (hundreds of pages) instead of a scan of the hub's status index.
CREATE INDEX opt_ins_hub_active_idx ON opt_ins (hub_id) WHERE status = 'active';
