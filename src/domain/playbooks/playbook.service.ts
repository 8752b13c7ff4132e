// Playbooks' one door; the SQL is in playbook.repository.ts.
import type { Db } from '../../db/database.ts';
import type { Solution } from '../opt-ins/opt-in.ts';
import { findPlaybooks as readPlaybooks, type PlaybookRecord } from './playbook.repository.ts';

export type { PlaybookRecord } from './playbook.repository.ts';

/** The playbooks of one hub (of one solution, if given), by id, keyset-paged: `limit + 1` rows to see whether more follow. */
export async function findPlaybooks(
  db: Db,
  hubId: string,
  page: { afterId?: string; limit: number; solution?: Solution },
): Promise<PlaybookRecord[]> {
  return readPlaybooks(db, hubId, page);
}
