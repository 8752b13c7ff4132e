// Reads the playbooks of a hub, keyset-paged.

import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Question } from './playbook.ts';
import type { Solution } from '../opt-ins/opt-in.ts';

export interface PlaybookRecord {
  _id: string;
  name: string;
  solutions: Solution[];
  /** Variant dimensions and their options, e.g. {"audience": ["Families", "Seniors"]}. */
  variants: Record<string, string[]>;
  questions: Question[];
  createdAt: string;
}

/**
 * The playbooks of one hub, by id (byte order), keyset-paged: `limit + 1` rows to see whether
 * more follow. Served by the playbooks (hub_id, id) unique index; tenancy is the hub filter.
 */
export async function findPlaybooks(
  db: Db,
  hubId: string,
  page: { afterId?: string; limit: number; solution?: Solution },
): Promise<PlaybookRecord[]> {
  const result = await sql<{
    id: string;
    name: string;
    solutions: Solution[];
    variants: PlaybookRecord['variants'];
    questions: Question[];
    created_at: Date;
  }>`
    SELECT p.id, p.name, p.solutions, p.variants, p.questions, p.created_at
      FROM playbooks p
     WHERE p.hub_id = ${hubId}
       ${page.solution !== undefined ? sql`AND ${page.solution} = ANY(p.solutions)` : sql``}
       ${page.afterId !== undefined ? sql`AND p.id > ${page.afterId}` : sql``}
     ORDER BY p.id
     LIMIT ${page.limit + 1}`.execute(db.kysely);
  return result.rows.map((r) => ({
    _id: r.id,
    name: r.name,
    solutions: r.solutions,
    variants: r.variants,
    questions: r.questions,
    createdAt: r.created_at.toISOString(),
  }));
}
