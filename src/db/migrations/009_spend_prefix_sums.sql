-- The spend report sums each workspace's spend over two 30-day ranges. Summing the daily rows
-- meant reading ~8,500 rows a day of range for a 10,000-workspace hub (510,000 for the report).
-- Instead, spend is also kept as running totals: days are grouped in aligned blocks of 64
-- (counted from 1970-01-01), and each (hub, workspace, block) row holds 64 running sums, so any
-- range within a block costs two array reads and a 61-day window touches at most two blocks.
-- Kept by statement triggers in the transaction of every change to spend.
CREATE TABLE spend_prefix_sums (
  hub_id        text COLLATE "C" NOT NULL,
  -- The workspace, or '' for unattributed spend.
  workspace_key text COLLATE "C" NOT NULL,
  -- floor((date - 1970-01-01) / 64): the block's first day is 64 × block days after 1970-01-01.
  block         integer NOT NULL,
  -- sums[i] = spend from the block's first day to its i-th day, inclusive (64 entries).
  sums          bigint[] NOT NULL CHECK (cardinality(sums) = 64),
  PRIMARY KEY (hub_id, block, workspace_key)
);

CREATE TYPE spend_delta AS (hub_id text, workspace_key text, date date, cents bigint);

-- Adds spend changes to the running sums: a change of c on day d of a block adds c to the
-- entries for d and every later day of that block. Rows are written in key order, so
-- concurrent writers cannot deadlock on each other.
CREATE FUNCTION add_spend_prefix_sums(deltas spend_delta[]) RETURNS void LANGUAGE sql AS $$
  WITH per_day AS (
    SELECT d.hub_id, d.workspace_key, floor((d.date - DATE '1970-01-01') / 64.0)::int AS block,
           (d.date - DATE '1970-01-01') - 64 * floor((d.date - DATE '1970-01-01') / 64.0)::int AS day,
           sum(d.cents) AS cents
      FROM unnest(deltas) d
     GROUP BY 1, 2, 3, 4
    HAVING sum(d.cents) <> 0
  ), running AS (
    SELECT k.hub_id, k.workspace_key, k.block, s.day,
           sum(coalesce(p.cents, 0)) OVER (PARTITION BY k.hub_id, k.workspace_key, k.block ORDER BY s.day) AS total
      FROM (SELECT DISTINCT hub_id, workspace_key, block FROM per_day) k
     CROSS JOIN generate_series(0, 63) s(day)
      LEFT JOIN per_day p ON (p.hub_id, p.workspace_key, p.block, p.day) = (k.hub_id, k.workspace_key, k.block, s.day)
  )
  INSERT INTO spend_prefix_sums AS t (hub_id, workspace_key, block, sums)
  SELECT hub_id, workspace_key, block, array_agg(total::bigint ORDER BY day)
    FROM running
   GROUP BY hub_id, block, workspace_key
   ORDER BY hub_id, block, workspace_key
  ON CONFLICT (hub_id, block, workspace_key) DO UPDATE
     SET sums = ARRAY(SELECT a + b FROM unnest(t.sums, EXCLUDED.sums) WITH ORDINALITY AS v(a, b, i) ORDER BY i)
$$;

CREATE FUNCTION spend_prefix_sums_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Only the branch taken is planned, so each names the transition tables its trigger has.
  IF TG_OP = 'INSERT' THEN
    PERFORM add_spend_prefix_sums(ARRAY(
      SELECT (hub_id, coalesce(workspace_id, ''), date, spend_cents)::spend_delta FROM new_rows));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM add_spend_prefix_sums(ARRAY(
      SELECT (hub_id, coalesce(workspace_id, ''), date, -spend_cents)::spend_delta FROM old_rows));
  ELSE
    PERFORM add_spend_prefix_sums(ARRAY(
      SELECT (hub_id, coalesce(workspace_id, ''), date, spend_cents)::spend_delta FROM new_rows
      UNION ALL
      SELECT (hub_id, coalesce(workspace_id, ''), date, -spend_cents)::spend_delta FROM old_rows));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER spend_prefix_ins AFTER INSERT ON spend REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION spend_prefix_sums_trigger();
CREATE TRIGGER spend_prefix_upd AFTER UPDATE ON spend REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION spend_prefix_sums_trigger();
CREATE TRIGGER spend_prefix_del AFTER DELETE ON spend REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION spend_prefix_sums_trigger();

-- Backfill, one hub at a time (each hub's spend is one array in memory).
DO $$
DECLARE hub text;
BEGIN
  FOR hub IN SELECT DISTINCT hub_id FROM spend LOOP
    PERFORM add_spend_prefix_sums(ARRAY(
      SELECT (hub_id, coalesce(workspace_id, ''), date, spend_cents)::spend_delta FROM spend WHERE hub_id = hub));
  END LOOP;
END $$;

-- The report no longer reads daily rows by hub and date.
DROP INDEX spend_hub_date_idx;
