-- /opt-in-summary's validator. Its figures depend only on each opt-in's hub, workspace, UTC day
-- of opted_in_at, and whether its status is active: they change when an opt-in is added or
-- removed, or when one of those four changes (a budget, variant or responses edit, a status moved
-- between two non-active statuses, opted_in_at moved within its day: every figure stays as it
-- was). Statement triggers bump opt_in_summary_version for the hubs such a statement touched, in
-- its transaction; at its commit, a deferred trigger moves opt_ins_changed_at forward to that
-- moment. The summary says its figures have been current since then (or since today's 00:00
-- UTC), so equal state gives equal bytes and a strong ETag can name it.
ALTER TABLE hubs
  ADD COLUMN opt_in_summary_version bigint NOT NULL DEFAULT 0,
  ADD COLUMN opt_ins_changed_at timestamptz NOT NULL DEFAULT now();

-- Backfill: the latest change the hub's data records, its opt-ins' updated_at (or the hub's
-- creation when it has none). hubops never deletes an opt-in, so no later change went unrecorded;
-- it is only shown on the day of this migration (asOf is never before today's 00:00 UTC).
UPDATE hubs h
   SET opt_ins_changed_at = greatest(h.created_at, (SELECT max(o.updated_at) FROM opt_ins o WHERE o.hub_id = h.id));

CREATE FUNCTION bump_opt_in_summary_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Only the branch taken is planned, so each names the transition tables its trigger has.
  IF TG_OP = 'INSERT' THEN
    UPDATE hubs SET opt_in_summary_version = opt_in_summary_version + 1 WHERE id IN (SELECT hub_id FROM new_rows);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE hubs SET opt_in_summary_version = opt_in_summary_version + 1 WHERE id IN (SELECT hub_id FROM old_rows);
  ELSE
    -- Rows are paired by id (the primary key); a row whose counted facts are all unchanged
    -- changes no figure. A row moved to another hub changes both hubs.
    UPDATE hubs SET opt_in_summary_version = opt_in_summary_version + 1
     WHERE id IN (SELECT moved.hub_id
                    FROM old_rows o JOIN new_rows n USING (id), LATERAL (VALUES (o.hub_id), (n.hub_id)) AS moved (hub_id)
                   WHERE (o.hub_id, o.workspace_id, (o.opted_in_at AT TIME ZONE 'UTC')::date, o.status = 'active')
                         IS DISTINCT FROM (n.hub_id, n.workspace_id, (n.opted_in_at AT TIME ZONE 'UTC')::date, n.status = 'active'));
  END IF;
  RETURN NULL;
END $$;

-- Named to fire before opt_ins_count_* (migration 006): triggers on one event fire in name order.
-- These lock the hub's row, those its opt_in_day_counts rows; an import locks the hub's row first
-- (its workspaces bump the catalog version), so every writer must take the hub's row first, or an
-- import and a plain opt-in write could deadlock.
CREATE TRIGGER opt_ins_bump_summary_ins AFTER INSERT ON opt_ins REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_opt_in_summary_version();
CREATE TRIGGER opt_ins_bump_summary_upd AFTER UPDATE ON opt_ins REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_opt_in_summary_version();
CREATE TRIGGER opt_ins_bump_summary_del AFTER DELETE ON opt_ins REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_opt_in_summary_version();

-- The change time is taken at commit, not when the changing statement ran: a reader between the
-- two sees the old figures, and a Last-Modified earlier than its read would hide the change from
-- its next If-Modified-Since. A transaction bumps a hub many times (an import, statement after
-- statement); the first firing at its COMMIT stamps the hub, and the others find it stamped
-- since that statement began. This UPDATE leaves the version alone, so it does not fire again.
CREATE FUNCTION stamp_opt_ins_changed_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE hubs SET opt_ins_changed_at = clock_timestamp()
   WHERE id = NEW.id AND opt_ins_changed_at < statement_timestamp();
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER hubs_stamp_opt_ins_changed_at AFTER UPDATE OF opt_in_summary_version ON hubs
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD.opt_in_summary_version IS DISTINCT FROM NEW.opt_in_summary_version)
  EXECUTE FUNCTION stamp_opt_ins_changed_at();
