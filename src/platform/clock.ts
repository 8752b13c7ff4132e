/** Time is injected so period and freshness rules can be tested at any instant. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock for tests: starts at the given instant and moves only when told. */
export class FixedClock implements Clock {
  #ms: number;
  constructor(at: Date | string) {
    this.#ms = new Date(at).getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  set(at: Date | string): void {
    this.#ms = new Date(at).getTime();
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
}
