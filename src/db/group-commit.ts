/**
 * Group commit: writes asked for while one statement is in flight wait, and go together in the
 * next statement. Idle, a write waits only for the turn of the event loop that gathers the writes
 * asked for with it (a round's posts, answers read in one poll); busy, one statement and one
 * commit carry as many as came in meanwhile. Each write still resolves only once committed, so a
 * caller that must not act before its write is durable (a delivery marked before its network is
 * called) waits exactly as long as it must.
 *
 * `run` writes the items in one statement and answers per item, in their order. When it throws,
 * nothing of that statement was committed: each item is written again alone, so only an item that
 * fails by itself is rejected (with its own error).
 */
export function groupCommit<Item, Result>(run: (items: Item[]) => Promise<Result[]>, maxItems = 500): (item: Item) => Promise<Result> {
  let queue: { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  let inFlight = false;
  let scheduled = false;

  const schedule = () => {
    if (scheduled || inFlight || queue.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  };

  async function flush(): Promise<void> {
    scheduled = false;
    inFlight = true;
    const batch = queue.length <= maxItems ? queue : queue.slice(0, maxItems);
    queue = queue.length <= maxItems ? [] : queue.slice(maxItems);
    try {
      const results = await run(batch.map((w) => w.item));
      for (const [i, w] of batch.entries()) w.resolve(results[i]!);
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      // One write's failure (a constraint, a deadlock) must not fail the others it went with:
      // each is written alone, and only those that fail alone are rejected.
      else
        for (const w of batch)
          await run([w.item]).then(
            (results) => w.resolve(results[0]!),
            (alone: unknown) => w.reject(alone),
          );
    } finally {
      inFlight = false;
      schedule();
    }
  }

  return (item) =>
    new Promise<Result>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      schedule();
    });
}
