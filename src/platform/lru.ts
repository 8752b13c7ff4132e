// A bounded in-memory cache: a Map kept in use order, least recently used first. Entries have a
// weight (1 unless `weigh` says otherwise); after every `set` the least recently used entries go
// until the total weight is at most `max` — except the entry just set, which always stays. An
// entry may carry an expiry (epoch ms): from then on it is not found.

export interface LruOptions<V> {
  /** The largest total weight kept. */
  max: number;
  /** An entry's weight; 1 each by default. */
  weigh?: (value: V) => number;
}

interface Slot<V> {
  value: V;
  weight: number;
  expiresAt: number | undefined;
}

export class LruCache<K, V> {
  readonly #slots = new Map<K, Slot<V>>();
  readonly #max: number;
  readonly #weigh: (value: V) => number;
  #weight = 0;

  constructor(options: LruOptions<V>) {
    this.#max = options.max;
    this.#weigh = options.weigh ?? (() => 1);
  }

  get size(): number {
    return this.#slots.size;
  }

  /** The entry, now the most recently used; undefined if absent or expired. */
  get(key: K, nowMs = Date.now()): V | undefined {
    const slot = this.#live(key, nowMs);
    if (!slot) return undefined;
    this.#slots.delete(key);
    this.#slots.set(key, slot);
    return slot.value;
  }

  /** The entry without changing its place in the use order; undefined if absent or expired. */
  peek(key: K, nowMs = Date.now()): V | undefined {
    return this.#live(key, nowMs)?.value;
  }

  /** Sets the entry as the most recently used, then evicts down to `max`. */
  set(key: K, value: V, options: { expiresAt?: number } = {}): void {
    this.delete(key);
    const weight = this.#weigh(value);
    this.#slots.set(key, { value, weight, expiresAt: options.expiresAt });
    this.#weight += weight;
    for (const oldest of this.#slots.keys()) {
      if (this.#weight <= this.#max || oldest === key) break;
      this.delete(oldest);
    }
  }

  delete(key: K): void {
    const slot = this.#slots.get(key);
    if (!slot) return;
    this.#slots.delete(key);
    this.#weight -= slot.weight;
  }

  clear(): void {
    this.#slots.clear();
    this.#weight = 0;
  }

  #live(key: K, nowMs: number): Slot<V> | undefined {
    const slot = this.#slots.get(key);
    if (slot?.expiresAt !== undefined && slot.expiresAt <= nowMs) {
      this.delete(key);
      return undefined;
    }
    return slot;
  }
}

/**
 * Values kept per key at the version they were computed at (a counter the database bumps with
 * every change): a lookup at another version finds nothing, so nothing here goes stale — a
 * changed entry is simply not found. Bounded: least recently used entries go.
 */
export class VersionedCache<V> {
  readonly #entries: LruCache<string, { version: string; value: V }>;
  constructor(max: number) {
    this.#entries = new LruCache({ max });
  }
  get(key: string, version: string): V | undefined {
    if (this.#entries.peek(key)?.version !== version) return undefined;
    return this.#entries.get(key)!.value;
  }
  set(key: string, version: string, value: V): void {
    this.#entries.set(key, { version, value });
  }
}
