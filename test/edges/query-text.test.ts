import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { fromQueryText } from '../../src/surfaces/operation.ts';
import { nestsDeeperThan, RouteMethods } from '../../src/surfaces/rest.ts';
import { Type } from 'typebox';

describe('strict query text and bounded input', () => {
  const schema = Type.Object({ limit: Type.Integer(), flag: Type.Boolean(), name: Type.String() });
  test('integers only as plain decimal digits, booleans only true/false, strings untouched', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.integer().map(String),
          fc.constantFrom('0x10', '1e2', '0b11', '0o7', '1.0', '+5', '05', '5.', ' 5', '5 ', '-0', ''),
        ),
        (text) => {
          const out = fromQueryText(schema, { limit: text, flag: text, name: text });
          const plain = /^(0|-?[1-9][0-9]*)$/.test(text) && Number.isSafeInteger(Number(text));
          assert.equal(out.limit, plain ? Number(text) : text, text);
          assert.equal(out.flag, text === 'true' ? true : text === 'false' ? false : text);
          assert.equal(out.name, text);
        },
      ),
    );
  });
  test('depth is measured without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.equal(nestsDeeperThan(deep, 32), true);
    assert.equal(nestsDeeperThan({ a: [{ b: [] }] }, 4), false);
    assert.equal(nestsDeeperThan({ a: [{ b: [] }] }, 3), true);
  });
  test('405 needs a path some route answers; wildcards say nothing', () => {
    const routes = new RouteMethods();
    routes.add('/posts', 'GET');
    routes.add('/posts', 'POST');
    routes.add('/posts/:id', ['GET', 'HEAD']);
    routes.add('/v1/hub/*', 'OPTIONS');
    assert.deepEqual(routes.allowed('/posts'), ['GET', 'HEAD', 'POST']);
    assert.deepEqual(routes.allowed('/posts/'), ['GET', 'HEAD', 'POST']);
    assert.deepEqual(routes.allowed('/posts/p%FF1'), ['GET', 'HEAD']);
    assert.deepEqual(routes.allowed('/posts/p1/x'), []);
    assert.deepEqual(routes.allowed('/v1/hub/anything'), []);
  });
});
