import { LruCache } from '../../platform/lru.ts';
import { HUB_CATALOG_MAX_ENTRIES } from '../../policy.ts';

/**
 * A hub's workspaces and playbooks as the JSON objects each opt-in row embeds, as they were at one
 * catalog version (hubs.catalog_version, bumped by triggers in the transaction of every change;
 * migration 008). A hub has thousands of workspaces and a million opt-ins, so splicing these
 * ready-made objects into rows replaces two joins and most of the per-row work of a page.
 */
export interface HubCatalog {
  version: string;
  /** `{"id":…,"name":…,"fields":{…}}` by workspace id; fields without the hub's archived ones. */
  workspaces: Map<string, string>;
  /** `{"id":…,"name":…,"solutions":[…]}` by playbook id. */
  playbooks: Map<string, string>;
}

/**
 * The catalogs of the hubs this process served lately. A catalog is only ever used at the
 * version it was read at, so nothing here can go stale; old versions are simply not found.
 * Bounded by entries (workspaces + playbooks) across hubs, least recently used hub first; the
 * hub used last always stays, whatever its size.
 */
export class HubCatalogCache {
  readonly #catalogs: LruCache<string, HubCatalog>;

  constructor(maxEntries = HUB_CATALOG_MAX_ENTRIES) {
    this.#catalogs = new LruCache({ max: maxEntries, weigh: (catalog) => catalog.workspaces.size + catalog.playbooks.size });
  }

  get(hubId: string, version: string): HubCatalog | undefined {
    if (this.#catalogs.peek(hubId)?.version !== version) return undefined;
    return this.#catalogs.get(hubId);
  }

  set(hubId: string, catalog: HubCatalog): void {
    this.#catalogs.set(hubId, catalog);
  }
}
