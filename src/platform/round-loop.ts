// A background loop of rounds, as the publisher and the syncs run: each round claims up to a
// batch of jobs and works them; a full batch means more may be waiting, so the next round starts
// at once, otherwise after the interval. A round that throws is reported and the loop carries on.
// stop() aborts the round's signal and waits for the round in flight to finish.

export interface RoundLoop {
  start(): void;
  stop(): Promise<void>;
}

export function createRoundLoop(o: {
  /** One round: resolves with the number of jobs it claimed. */
  round: (signal: AbortSignal) => Promise<number>;
  intervalMs: number;
  batchSize: number;
  stopReason: string;
  onError?: (error: unknown) => void;
}): RoundLoop {
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let abort = new AbortController();

  const tick = () => {
    current = o
      .round(abort.signal)
      .catch((error: unknown) => {
        o.onError?.(error);
        return 0;
      })
      .then((claimed) => {
        if (running) timer = setTimeout(tick, claimed >= o.batchSize ? 0 : o.intervalMs);
      });
  };

  return {
    start() {
      if (running) return;
      running = true;
      abort = new AbortController();
      tick();
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      abort.abort(new Error(o.stopReason));
      await current;
    },
  };
}
