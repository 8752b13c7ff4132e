import type { Db } from '../../db/database.ts';
import { entityTag, type Validator } from '../../platform/validators.ts';
import type { Position } from '../keyset.ts';
import type { OptInRow } from './opt-in.ts';
import {
  readExportCatalog,
  readOptInExportPage,
  readOptInExportState,
  type OptInExportFilters,
  type OptInExportState,
} from './opt-in-export.repository.ts';

export type { OptInExportFilters, OptInExportState } from './opt-in-export.repository.ts';

/** Rows per keyset page of an export: big enough to amortise the query, small in memory. */
export const EXPORT_PAGE_SIZE = 2000;

/** What the export of `filters` is a function of now (one statement, no rows read). */
export async function optInExportState(db: Db, filters: OptInExportFilters): Promise<OptInExportState> {
  return readOptInExportState(db, filters);
}

/**
 * The export's strong validator: its filters, `representation` (the format and its options, e.g.
 * a BOM) and its state. A row that changes while an export streams is read at its new place in
 * the (updatedAt, id) order: the export that carried this tag may then hold newer rows than the
 * tag names, never older ones, and the next request sees a new tag.
 */
export function optInExportValidator(filters: OptInExportFilters, state: OptInExportState, representation: string): Validator {
  // Every field of the filters, by name: a field added to OptInExportFilters does not compile until it is hashed here.
  const filtered: { [field in keyof Required<OptInExportFilters>]: string | number | undefined } = {
    hubId: filters.hubId,
    since: filters.since?.getTime(),
    playbookId: filters.playbookId,
    status: filters.status,
    workspaceId: filters.workspaceId,
    optedInFrom: filters.optedInFrom?.getTime(),
    optedInBefore: filters.optedInBefore?.getTime(),
  };
  return {
    etag: entityTag(
      'opt-ins-export',
      representation,
      ...Object.values(filtered),
      state.catalogVersion,
      state.fieldKeys.join('\u0000'),
      state.rows,
      state.keysSum,
    ),
  };
}

/**
 * Every opt-in of the filters, oldest change first, one keyset page at a time: the consumer asks
 * for the next page only when it is ready for it, so memory holds one page. Each page is read as
 * it comes (no snapshot across pages, which would hold a connection for as long as a slow client
 * reads): a row that changes meanwhile may come again at its new place, nothing is skipped. The
 * hub's workspaces and playbooks are read once (and again if a row names one created since).
 */
export async function* optInExportPages(db: Db, filters: OptInExportFilters, pageSize = EXPORT_PAGE_SIZE): AsyncGenerator<OptInRow[]> {
  let catalog = await readExportCatalog(db, filters.hubId);
  let from: Position | undefined;
  for (;;) {
    let page = await readOptInExportPage(db, filters, catalog, from, pageSize);
    if (!page) {
      // A workspace or playbook created since the catalog was read: read both again.
      catalog = await readExportCatalog(db, filters.hubId);
      page = await readOptInExportPage(db, filters, catalog, from, pageSize);
      // Cannot happen twice: foreign keys tie every opt-in to a workspace and a playbook of its hub.
      if (!page) throw new Error(`opt-in export of hub ${filters.hubId} refers to a workspace or playbook outside its catalog`);
    }
    if (page.rows.length > 0) yield page.rows;
    if (!page.next) return;
    from = page.next;
  }
}
