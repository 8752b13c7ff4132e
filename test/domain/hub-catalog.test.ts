import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { HubCatalogCache, type HubCatalog } from '../../src/domain/opt-ins/hub-catalog.ts';

describe('hub catalog cache', () => {
  test('finds a catalog only at its version, and drops the least recently used hubs past its bound', () => {
    // Model: the hubs in order of last use; the bound counts workspaces + playbooks.
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), hub: fc.nat(5), version: fc.nat(2), size: fc.nat(6) }),
      fc.record({ kind: fc.constant('get' as const), hub: fc.nat(5), version: fc.nat(2) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const max = 10;
        const cache = new HubCatalogCache(max);
        let model: { hub: string; catalog: HubCatalog }[] = [];
        const size = (c: HubCatalog) => c.workspaces.size + c.playbooks.size;
        for (const o of ops) {
          const hub = `hub${o.hub}`;
          if (o.kind === 'set') {
            const catalog: HubCatalog = {
              version: String(o.version),
              workspaces: new Map(Array.from({ length: o.size }, (_, i) => [`w${i}`, '{}'])),
              playbooks: new Map([['p', '{}']]),
            };
            cache.set(hub, catalog);
            model = [...model.filter((m) => m.hub !== hub), { hub, catalog }];
            while (model.length > 1 && model.reduce((n, m) => n + size(m.catalog), 0) > max) model.shift();
          } else {
            const found = model.find((m) => m.hub === hub && m.catalog.version === String(o.version));
            assert.equal(cache.get(hub, String(o.version)), found?.catalog);
            if (found) model = [...model.filter((m) => m !== found), found];
          }
        }
      }),
    );
  });
});
