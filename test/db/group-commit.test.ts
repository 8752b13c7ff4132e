import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupCommit } from '../../src/db/group-commit.ts';

// The group commit the publisher's writes go by (src/db/group-commit.ts), with a fake statement:
// what it batches, that each caller gets its own answer, and that one bad write fails only itself.

test('writes asked for together, and while a statement is in flight, share statements; each gets its own answer in order', async () => {
  const statements: number[][] = [];
  let release: (() => void) | undefined;
  const write = groupCommit(async (items: number[]) => {
    statements.push(items);
    if (statements.length === 1) await new Promise<void>((resolve) => (release = resolve));
    return items.map((n) => n * 10);
  });
  const first = [write(1), write(2), write(3)];
  await new Promise((resolve) => setImmediate(resolve));
  // The first statement is in flight: these wait for it, then go together.
  const second = [write(4), write(5)];
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(statements, [[1, 2, 3]]);
  release!();
  assert.deepEqual(await Promise.all([...first, ...second]), [10, 20, 30, 40, 50]);
  assert.deepEqual(statements, [
    [1, 2, 3],
    [4, 5],
  ]);
});

test('a statement that fails is written again item by item: only the item that fails alone is rejected, with its own error', async () => {
  const statements: string[][] = [];
  const write = groupCommit(async (items: string[]) => {
    statements.push(items);
    const bad = items.find((item) => item.startsWith('bad'));
    if (bad) throw new Error(`${bad} violates a constraint`);
    return items.map((item) => item.toUpperCase());
  });
  const answers = await Promise.allSettled([write('a'), write('bad-b'), write('c')]);
  assert.deepEqual(
    answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message)),
    ['A', 'bad-b violates a constraint', 'C'],
  );
  assert.deepEqual(statements, [['a', 'bad-b', 'c'], ['a'], ['bad-b'], ['c']]);
});

test('at most maxItems a statement: the rest go in the next', async () => {
  const sizes: number[] = [];
  const write = groupCommit(async (items: number[]) => {
    sizes.push(items.length);
    return items;
  }, 4);
  assert.equal((await Promise.all(Array.from({ length: 10 }, (_, i) => write(i)))).length, 10);
  assert.deepEqual(sizes, [4, 4, 2]);
});
