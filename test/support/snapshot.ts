import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';

const TABLES = [
  'accounts',
  'hubs',
  'workspaces',
  'workspace_fields',
  'users',
  'memberships',
  'playbooks',
  'opt_ins',
  'ad_accounts',
  'spend',
  'api_keys',
  'social_channels',
  'media_assets',
  'posts',
  'post_media',
  'post_deliveries',
  'organic_metrics',
  'hub_cpm',
  'paid_metrics',
  'review_days',
] as const;

/**
 * Row count and a digest of the full contents of every table, to prove that a refused operation
 * left the database exactly as it was (hubs.report_version included: triggers bump it on writes).
 */
export async function snapshot(db: Db): Promise<Record<string, { rows: number; digest: string | null }>> {
  const out: Record<string, { rows: number; digest: string | null }> = {};
  for (const table of TABLES) {
    const { rows } = await sql<{ rows: string; digest: string | null }>`
      SELECT count(*) AS rows, md5(string_agg(t::text, ',' ORDER BY t::text)) AS digest FROM ${sql.table(table)} t`.execute(db.kysely);
    out[table] = { rows: Number(rows[0]!.rows), digest: rows[0]!.digest };
  }
  return out;
}
