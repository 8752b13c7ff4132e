-- /opt-in-summary reads counts instead of counting rows: opt-ins per hub and UTC day of
-- optedInAt, and per hub and status, kept by statement triggers in the same transaction as the
-- change (so they are exactly as fresh as the rows). What is left to scan on a request is the
-- distinct-workspace part, which no per-day total can answer.
CREATE TABLE opt_in_day_counts (
  hub_id text COLLATE "C" NOT NULL REFERENCES hubs (id) ON DELETE CASCADE,
  day date NOT NULL,
  opt_ins integer NOT NULL,
  PRIMARY KEY (hub_id, day)
);

CREATE TABLE opt_in_status_counts (
  hub_id text COLLATE "C" NOT NULL REFERENCES hubs (id) ON DELETE CASCADE,
  status text NOT NULL,
  opt_ins integer NOT NULL,
  PRIMARY KEY (hub_id, status)
);

-- Adds signed row counts (+1 per row added, -1 per row removed). Rows are upserted in key
-- order, so concurrent writers lock counter rows in the same order and cannot deadlock; changes
-- that cancel out (an update that moves neither day nor status) touch nothing; the rows of a hub
-- being deleted (a cascade) leave no counts behind.
CREATE FUNCTION add_opt_in_counts(hub_ids text[], opted_in_ats timestamptz[], statuses text[], signs integer[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO opt_in_day_counts AS c (hub_id, day, opt_ins)
  SELECT hub_id, (opted_in_at AT TIME ZONE 'UTC')::date, sum(sign)
    FROM unnest(hub_ids, opted_in_ats, signs) AS u(hub_id, opted_in_at, sign)
   WHERE EXISTS (SELECT FROM hubs h WHERE h.id = u.hub_id)
   GROUP BY 1, 2 HAVING sum(sign) <> 0 ORDER BY 1, 2
  ON CONFLICT (hub_id, day) DO UPDATE SET opt_ins = c.opt_ins + excluded.opt_ins;
  INSERT INTO opt_in_status_counts AS c (hub_id, status, opt_ins)
  SELECT hub_id, status, sum(sign)
    FROM unnest(hub_ids, statuses, signs) AS u(hub_id, status, sign)
   WHERE EXISTS (SELECT FROM hubs h WHERE h.id = u.hub_id)
   GROUP BY 1, 2 HAVING sum(sign) <> 0 ORDER BY 1, 2
  ON CONFLICT (hub_id, status) DO UPDATE SET opt_ins = c.opt_ins + excluded.opt_ins;
$$;

CREATE FUNCTION count_inserted_opt_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM add_opt_in_counts(array_agg(hub_id), array_agg(opted_in_at), array_agg(status), array_agg(1)) FROM new_rows;
  RETURN NULL;
END $$;

CREATE FUNCTION count_updated_opt_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM add_opt_in_counts(array_agg(hub_id), array_agg(opted_in_at), array_agg(status), array_agg(sign))
     FROM (SELECT hub_id, opted_in_at, status, 1 AS sign FROM new_rows
           UNION ALL
           SELECT hub_id, opted_in_at, status, -1 FROM old_rows) AS changes;
  RETURN NULL;
END $$;

CREATE FUNCTION count_deleted_opt_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM add_opt_in_counts(array_agg(hub_id), array_agg(opted_in_at), array_agg(status), array_agg(-1)) FROM old_rows;
  RETURN NULL;
END $$;

CREATE TRIGGER opt_ins_count_ins AFTER INSERT ON opt_ins REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION count_inserted_opt_ins();
CREATE TRIGGER opt_ins_count_upd AFTER UPDATE ON opt_ins REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION count_updated_opt_ins();
CREATE TRIGGER opt_ins_count_del AFTER DELETE ON opt_ins REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION count_deleted_opt_ins();

INSERT INTO opt_in_day_counts (hub_id, day, opt_ins)
SELECT hub_id, (opted_in_at AT TIME ZONE 'UTC')::date, count(*) FROM opt_ins GROUP BY 1, 2;
INSERT INTO opt_in_status_counts (hub_id, status, opt_ins)
SELECT hub_id, status, count(*) FROM opt_ins GROUP BY 1, 2;

-- Served by the counts now.
DROP INDEX opt_ins_hub_active_idx;
