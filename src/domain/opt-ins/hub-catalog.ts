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
  readonly #catalogs = new Map<string, HubCatalog>();
  readonly #maxEntries: number;
  #entries = 0;

  constructor(maxEntries = 100_000) {
    this.#maxEntries = maxEntries;
  }

  get(hubId: string, version: string): HubCatalog | undefined {
    const catalog = this.#catalogs.get(hubId);
    if (!catalog || catalog.version !== version) return undefined;
    this.#catalogs.delete(hubId);
    this.#catalogs.set(hubId, catalog);
    return catalog;
  }

  set(hubId: string, catalog: HubCatalog): void {
    this.#remove(hubId);
    this.#catalogs.set(hubId, catalog);
    this.#entries += sizeOf(catalog);
    for (const oldest of this.#catalogs.keys()) {
      if (this.#entries <= this.#maxEntries || oldest === hubId) break;
      this.#remove(oldest);
    }
  }

  #remove(hubId: string): void {
    const catalog = this.#catalogs.get(hubId);
    if (!catalog) return;
    this.#catalogs.delete(hubId);
    this.#entries -= sizeOf(catalog);
  }
}

const sizeOf = (catalog: HubCatalog) => catalog.workspaces.size + catalog.playbooks.size;
