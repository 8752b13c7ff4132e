import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Db } from '../../db/database.ts';
import { groupCommit } from '../../db/group-commit.ts';
import type { DeliveryStatus } from '../../db/schema.ts';
import { PlatformError, PlatformThrottled } from '../../integrations/ad-platform.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Sealer } from '../../platform/sealing.ts';
import {
  PUBLISH_LEASE_MS,
  PUBLISH_MAX_CLAIMS,
  PUBLISH_RETRY_BACKOFF_MS,
  PUBLISH_TIMEOUT_MS,
  RECONCILE_BACKOFF_MS,
  RECONCILE_MAX_CHECKS,
  RECONCILE_SETTLE_MS,
  RECONCILE_SKEW_MS,
} from '../../policy.ts';
import type { MediaUrlSigner } from '../media/media-url.ts';
import {
  ChannelConnectors,
  DeliveryUnconfirmed,
  LookupAmbiguous,
  PublishNotReady,
  type Connector,
  type OutgoingChannel,
  type OutgoingPost,
  type Publication,
} from './connector.ts';
import {
  claimDue,
  claimRetries,
  deliveryStates,
  loadWork,
  type Mark,
  markMany,
  type PostOutcome,
  type PublishedWrite,
  reclaimExpired,
  recordCheckFailed,
  recordFailed,
  recordOutcomes,
  recordPublishedMany,
  recordThenMark,
  recordWrite,
  retryLater,
  type Claim,
  type DeliveryAt,
  type DeliveryFailure,
  type DeliveryWrite,
  deliveryWrites,
  recordFound,
  type OpenDelivery,
} from './publisher.repository.ts';

// The background publisher: exactly once without idempotency keys (no network documents one).
// Each round claims a small batch of posts (FOR UPDATE SKIP LOCKED under a lease: any number of
// loops and instances share the queue) — due scheduled posts, posts whose publisher died (lease
// run out), posts whose wait is over — and works each post's open deliveries in order:
//
//   pending ──mark publishing (committed)──► publish ──► published | failed
//                                                   └─► pending again (nothing published: a
//                                                       throttle, or a transient failure: backoff)
//                                                   └─► unconfirmed (no answer: timeout, lost
//                                                       connection, or the publisher died)
//   unconfirmed ──(settle delay)──► find ──► found: published
//                                        └─► none: send again (as pending, above; a retry)
//                                        └─► cannot tell: wait (backoff), at last failed
//                                            "could not confirm; check the channel"
//
// A delivery is marked `publishing`, committed, before the network is called (the statement may
// carry other deliveries' writes: group commit, src/db/group-commit.ts),
// so whatever happens after (a crash, a timeout) it is never taken for unsent: the next claimant
// finds it `publishing`, makes it `unconfirmed`, and looks it up. A throttled delivery published
// nothing: it is pending again and the post waits out the network's retry-after. A delivery whose
// network failed on its side (`platform_error`) or could not be reached before anything was sent
// (`unreachable`) published nothing either (connectors throw these kinds only then; a send that may
// have been made is DeliveryUnconfirmed): it is sent again after a backoff, at most
// PUBLISH_MAX_RETRIES times in all with the re-sends after lookups that found none, then fails
// with the network's words.

/** Failure kinds the publisher adds to the networks' (src/integrations/ad-platform.ts). */
export const DELIVERY_FAILURE_KINDS = {
  /** Lookups of an unconfirmed delivery could not tell, RECONCILE_MAX_CHECKS times: a person checks the channel. */
  notConfirmed: 'not_confirmed',
  /** The post's publishers kept stopping (PUBLISH_MAX_CLAIMS claims ran out): its unsent deliveries fail. */
  publisherStopped: 'publisher_stopped',
  /** Why an unconfirmed delivery is unconfirmed: the call timed out or broke after it may have been sent. */
  noAnswer: 'no_answer',
} as const;

export interface PublisherOptions {
  db: Db;
  clock: Clock;
  /** Which connector publishes to each channel; a bare Connector publishes to every channel (tests, the bench). */
  connectors: ChannelConnectors | Connector;
  /** Opens channels' sealed tokens; without it, a connected channel's delivery fails (sandbox channels need none). */
  sealer?: Sealer;
  /** Signs the public URLs of media the networks fetch; without it media urls stay null. */
  mediaUrls?: MediaUrlSigner;
  /** Pause between rounds when there was nothing (or not a full batch) to do. */
  intervalMs: number;
  /** Posts claimed per round. */
  batchSize: number;
  /** How long a claim holds before another publisher may take the post over. Default PUBLISH_LEASE_MS. */
  leaseMs?: number;
  /**
   * Longest wait for one network call, counted from the attempt's start; past it the call is
   * aborted, so no publishing request leaves later. Below the settle delay. Default PUBLISH_TIMEOUT_MS.
   */
  publishTimeoutMs?: number;
  /** Claims of one post ended by their publisher's death before its unsent deliveries fail. Default PUBLISH_MAX_CLAIMS. */
  maxAttempts?: number;
  /**
   * Wait after an unconfirmed attempt began before looking it up: longer than the publish timeout,
   * so the attempt's publication, if any, was requested before the lookup (plus the time the
   * network takes to list it). Default RECONCILE_SETTLE_MS.
   */
  settleMs?: number;
  /** Lookups search from this long before the attempt began. Default RECONCILE_SKEW_MS. */
  skewMs?: number;
  /** Waits after lookups that could not tell; their count is the give-up. Default RECONCILE_BACKOFF_MS. */
  checkBackoffMs?: readonly number[];
  /** Waits before sending again after a transient failure; their count bounds the retries. Default PUBLISH_RETRY_BACKOFF_MS. */
  retryBackoffMs?: readonly number[];
  /** A round that failed (e.g. the database is down); the loop carries on. */
  onError?: (error: unknown) => void;
  /** What an operator follows in the log: takeovers, deliveries left unconfirmed, and how each lookup ended. */
  onEvent?: (event: PublisherEvent) => void;
}

/** A delivery named for the log: ids and the network, never a token or the post's text. */
export interface DeliveryRef {
  postId: string;
  channelId: string;
  platform: string;
}

export type PublisherEvent =
  /** Posts whose publisher's lease ran out, claimed by this one: their `publishing` deliveries are now `unconfirmed`. */
  | { kind: 'taken_over'; posts: string[] }
  /** A send got no answer (or one that does not say): the delivery is looked up after the settle delay. */
  | ({ kind: 'unconfirmed'; reason: string } & DeliveryRef)
  /** A lookup ended: found (published), none (sent again, or failed when the retries are used up), or given up (not_confirmed). */
  | ({ kind: 'reconciled'; outcome: 'found' | 'sent_again' | 'failed' | 'not_confirmed' } & DeliveryRef);

export interface Publisher {
  /** Starts the loop (a no-op when running). */
  start(): void;
  /** Stops the loop and waits for the round in flight to finish. */
  stop(): Promise<void>;
  /** One round: claims and works up to a batch; resolves with the number of posts claimed. */
  runOnce(): Promise<number>;
}

const MAX_ERROR_LENGTH = 1_000;

function clip(text: string): string {
  const t = text.trim();
  return t.length > MAX_ERROR_LENGTH ? `${t.slice(0, MAX_ERROR_LENGTH - 1)}…` : t;
}

class CallTimeout extends Error {}

/** How long a call given up has to say it stopped before anything was sent (PublishNotReady). */
const ABORT_GRACE_MS = 1_000;

/**
 * A network call under a deadline: `call` gets a signal that is aborted when `ms` run out, and the
 * result is rejected with CallTimeout then. The connectors honour the signal by sending nothing
 * more (src/integrations/channel-platform.ts), so a call given up is over on our side too. One
 * that stops while the network is still preparing the post says so (PublishNotReady: nothing was
 * sent) within ABORT_GRACE_MS, and that is the verdict; anything else after the deadline is CallTimeout.
 */
function withTimeout<T>(call: (signal: AbortSignal) => Promise<T>, ms: number, limitMs: number): { result: Promise<T>; call: Promise<T> } {
  const abort = new AbortController();
  const running = call(abort.signal);
  const timeout = new CallTimeout(`the network did not answer within ${limitMs / 1000} s`);
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  let grace: NodeJS.Timeout | undefined;
  const result = new Promise<T>((resolve, reject) => {
    running.then(
      (value) => (timedOut ? reject(timeout) : resolve(value)),
      (error: unknown) => reject(timedOut && !(error instanceof PublishNotReady) ? timeout : error),
    );
    timer = setTimeout(() => {
      timedOut = true;
      abort.abort(timeout);
      grace = setTimeout(() => reject(timeout), ABORT_GRACE_MS);
    }, ms);
  }).finally(() => {
    clearTimeout(timer);
    clearTimeout(grace);
  });
  return { result, call: running };
}

/**
 * A post's status from its deliveries' (the rule the API documents): `publishing` while any
 * delivery is pending, publishing or unconfirmed (an unconfirmed one may yet turn out published);
 * then `failed` if any failed; else `published` (every channel has it).
 */
export function postOutcome(statuses: readonly DeliveryStatus[]): 'publishing' | 'published' | 'failed' {
  if (statuses.some((s) => s === 'pending' || s === 'publishing' || s === 'unconfirmed')) return 'publishing';
  return statuses.includes('failed') ? 'failed' : 'published';
}

/** A delivery as a round works it: its status becomes undefined when a write did not apply (read it again). */
type Step = Omit<OpenDelivery, 'status'> & { status: DeliveryStatus | undefined };

/**
 * Failure kinds of a send that published nothing and may succeed later: the network failed on its
 * side or said the error is temporary, or could not be reached before anything was sent. (The
 * connectors throw them only when nothing can have been published; otherwise DeliveryUnconfirmed.)
 */
const TRANSIENT: ReadonlySet<string> = new Set(['platform_error', 'unreachable']);

/** A channel the publisher can send to, or why it cannot. */
type Target = { connector: Connector; channel: OutgoingChannel } | { failure: DeliveryFailure };

const refOf = (post: OutgoingPost, d: { channelId: string; platform: string }): DeliveryRef => ({
  postId: post.id,
  channelId: d.channelId,
  platform: d.platform,
});

export function createPublisher(options: PublisherOptions): Publisher {
  const { db, clock, intervalMs, batchSize } = options;
  const connectors = options.connectors instanceof ChannelConnectors ? options.connectors : ChannelConnectors.only(options.connectors);
  const leaseMs = options.leaseMs ?? PUBLISH_LEASE_MS;
  const timeoutMs = options.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS;
  const maxAttempts = options.maxAttempts ?? PUBLISH_MAX_CLAIMS;
  const settleMs = options.settleMs ?? RECONCILE_SETTLE_MS;
  const skewMs = options.skewMs ?? RECONCILE_SKEW_MS;
  const backoff = options.checkBackoffMs ?? RECONCILE_BACKOFF_MS;
  const maxChecks = options.checkBackoffMs ? backoff.length : RECONCILE_MAX_CHECKS;
  // PUBLISH_MAX_RETRIES is the length of PUBLISH_RETRY_BACKOFF_MS: one wait per retry.
  const retryBackoff = options.retryBackoffMs ?? PUBLISH_RETRY_BACKOFF_MS;
  const maxRetries = retryBackoff.length;
  // A lookup must come after anything the attempt could still send: the call's deadline.
  if (settleMs <= timeoutMs) throw new Error(`the settle delay (${settleMs} ms) must be longer than the publish timeout (${timeoutMs} ms)`);
  const claimant = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const later = (ms: number) => new Date(clock.now().getTime() + ms);
  /** An event for the operator's log: a handler that throws changes nothing of the round. */
  const emit = (event: PublisherEvent) => {
    try {
      options.onEvent?.(event);
    } catch {}
  };
  // The hot writes (a delivery marked before its send, a publication, a post's outcome) go by group
  // commit: a round's posts, answers read together, share one statement and one commit each.
  const mark = groupCommit((marks: Mark[]) => markMany(db, marks));
  const recordPublished = groupCommit((writes: PublishedWrite[]) => recordPublishedMany(db, writes));
  const recordOutcome = groupCommit((outcomes: PostOutcome[]) => recordOutcomes(db, outcomes));

  const needsReconnect = (error: string): Target => ({ failure: { kind: 'needs_reconnect', error } });

  /** The channel's connector and unsealed secret, or why it cannot be sent to (never the secret in any text). */
  function targetOf(d: Omit<OpenDelivery, 'status'>): Target {
    const connector = connectors.for({ platform: d.platform, connectionId: d.connectionId });
    if (!connector)
      return {
        failure: { kind: 'invalid_request', error: `this server has no ${d.platform} connector; the channel cannot be published to` },
      };
    if (!d.connected) return needsReconnect('the channel is disconnected; reconnect it and schedule the post again');
    let secret: string | null = null;
    if (d.connectionId !== null) {
      if (!d.connectionFound) return needsReconnect("the channel's connection is gone; connect the channel again");
      if (d.tokenExpiresAt && d.tokenExpiresAt.getTime() <= clock.now().getTime())
        return needsReconnect(`the channel's token expired on ${d.tokenExpiresAt.toISOString().slice(0, 10)}; reconnect it`);
      const sealed = d.channelTokenSealed ?? d.connectionTokenSealed;
      if (!sealed) return needsReconnect('the channel has no stored token; reconnect it');
      if (!options.sealer) return needsReconnect('this server cannot open stored tokens (no secrets key given to the publisher)');
      try {
        // A Page token is sealed with the channel id; the connection's token with the connection id.
        secret = options.sealer.open(sealed, d.channelTokenSealed ? d.channelId : d.connectionId);
      } catch {
        return needsReconnect("the channel's stored token does not open with this server's secrets key; reconnect it");
      }
    }
    return {
      connector,
      channel: { id: d.channelId, platform: d.platform, name: d.name, handle: d.handle, externalId: d.externalId, secret },
    };
  }

  /**
   * Sends one delivery (pending, or unconfirmed after a lookup found nothing: `o.retry`) and
   * records what became of it in `d` (status and error; status undefined: not recorded, read it
   * again); when to come back, if ever. `marked`: the previous delivery's write already marked this
   * one `publishing` at that instant. `following`: the post's next delivery to send, marked by this
   * one's write (one statement, one commit); `markedNext` says whether it was, and when.
   */
  async function send(
    post: OutgoingPost,
    d: Step,
    target: Target,
    claim: Claim,
    o: { marked?: Date | undefined; following?: Step | undefined; retry?: boolean } = {},
  ): Promise<{ retryAt: Date | null; markedNext?: Date }> {
    const at: DeliveryAt = { postId: post.id, channelId: d.channelId, status: d.status!, attemptStartedAt: d.attemptStartedAt };
    const became = (applied: boolean, status: DeliveryStatus, error: string | null = null) => {
      d.status = applied ? status : undefined;
      d.error = error;
    };
    if ('failure' in target) {
      became(await recordFailed(db, at, target.failure, clock.now()), 'failed', target.failure.error);
      return { retryAt: null };
    }
    const attempt = o.marked ?? clock.now();
    if (!o.marked && !(await mark({ at, claim, attempt, retry: o.retry ?? false }))) {
      became(false, 'pending'); // the claim was lost: another publisher has the post
      return { retryAt: null };
    }
    const sending: DeliveryAt = { ...at, status: 'publishing', attemptStartedAt: attempt };
    let markedNext: Date | undefined;
    /** This delivery's write, with the next delivery's mark when there is one to send. */
    const commit = async (write: DeliveryWrite): Promise<boolean> => {
      if (!o.following) return recordWrite(db, write);
      const nextAttempt = clock.now();
      const next = { postId: post.id, channelId: o.following.channelId, status: 'pending' as const, attemptStartedAt: null };
      const { recorded, marked } = await recordThenMark(db, write, { at: next, claim, attempt: nextAttempt });
      if (marked) markedNext = nextAttempt;
      return recorded;
    };
    /** The publication recorded, with the next delivery's mark when there is one to send. */
    const published = async (publication: Publication): Promise<boolean> => {
      const next: Mark | undefined = o.following && {
        at: { postId: post.id, channelId: o.following.channelId, status: 'pending', attemptStartedAt: null },
        claim,
        attempt: clock.now(),
      };
      const { recorded, marked } = await recordPublished({ at: sending, publication, now: clock.now(), next });
      if (marked) markedNext = next!.attempt;
      return recorded;
    };
    const outcome = (retryAt: Date | null) => (markedNext ? { retryAt, markedNext } : { retryAt });
    // The deadline counts from the attempt's start (marking it took some of it): nothing of this
    // attempt is sent after attempt + timeout, which the settle delay outlasts.
    const left = timeoutMs - (clock.now().getTime() - attempt.getTime());
    const prepared = d.prepared ?? undefined;
    // No time left (the marks waited in a busy database): nothing is sent; the attempt is looked
    // up as a timeout is, and sent again when the lookup finds none.
    const { result, call } =
      left > 0
        ? withTimeout((signal) => target.connector.publish(post, target.channel, signal, prepared), left, timeoutMs)
        : { result: Promise.reject(new CallTimeout(`no time was left of the ${timeoutMs / 1000} s to send it`)), call: Promise.reject() };
    call.catch(() => {});
    try {
      const publication = await result;
      became(await published(publication), 'published');
      return outcome(null);
    } catch (error) {
      if (error instanceof PublishNotReady) {
        // Nothing was published: the network is still preparing the post (a reel's container);
        // the next attempt goes on from what it prepared.
        became(await commit(deliveryWrites.preparing(sending, error.prepared, clip(error.message))), 'pending');
        return outcome(later(Math.max(error.retryAfterMs, 1_000)));
      }
      if (error instanceof PlatformThrottled) {
        // Nothing was published: throttling waits, it is not a failure.
        became(await commit(deliveryWrites.pending(sending, error.platformMessage ?? error.message)), 'pending');
        return outcome(later(Math.max(error.retryAfterMs, 1_000)));
      }
      if (error instanceof PlatformError) {
        const failure = {
          kind: error.kind,
          error: clip(error.message),
          platformMessage: error.platformMessage,
          platformCode: error.platformCode,
        };
        const sends = d.retries + (o.retry ? 1 : 0) + 1;
        if (TRANSIENT.has(error.kind) && sends <= maxRetries) {
          // Nothing was published and the network may take it later: pending again, after a backoff.
          const retries = await retryLater(db, sending, { ...failure, platformMessage: failure.platformMessage ?? failure.error });
          became(retries > 0, 'pending');
          return outcome(retries > 0 ? later(retryBackoff[Math.min(retries, maxRetries) - 1]!) : null);
        }
        if (TRANSIENT.has(error.kind)) failure.error = clip(`${error.message} (sent ${sends} times; nothing was published)`);
        became(await commit(deliveryWrites.failed(sending, failure, clock.now())), 'failed', failure.error);
        return outcome(null);
      }
      // DeliveryUnconfirmed, our timeout, or anything the connector did not classify: the request
      // may have been made, so it is looked up once the network's lists have settled.
      if (!(error instanceof DeliveryUnconfirmed) && !(error instanceof CallTimeout)) options.onError?.(error);
      // Our words only (a connector's or the timeout's): an unclassified error's text may quote anything.
      const reason =
        error instanceof DeliveryUnconfirmed || error instanceof CallTimeout ? clip(error.message) : 'the connector failed unexpectedly';
      emit({ kind: 'unconfirmed', ...refOf(post, d), reason });
      became(await commit(deliveryWrites.unconfirmed(sending, DELIVERY_FAILURE_KINDS.noAnswer)), 'unconfirmed');
      // An answer that comes after the timeout is the truth: it confirms the delivery (if it is
      // still this attempt's), sparing the lookup.
      if (error instanceof CallTimeout)
        call.then(
          (publication) => recordPublished({ at: { ...sending, status: 'unconfirmed' }, publication, now: clock.now() }).catch(() => {}),
          () => {},
        );
      return outcome(new Date(attempt.getTime() + settleMs));
    }
  }

  /** Looks an unconfirmed delivery up; found: published; none: sent again; cannot tell: later, or given up. */
  async function reconcile(post: OutgoingPost, d: Step, claim: Claim): Promise<Date | null> {
    const started = d.attemptStartedAt!;
    const settled = new Date(started.getTime() + settleMs);
    if (clock.now().getTime() < settled.getTime()) return settled;
    const at: DeliveryAt = { postId: post.id, channelId: d.channelId, status: 'unconfirmed', attemptStartedAt: started };
    const target = targetOf(d);
    /** The lookup could not tell (the network failed, throttled, or the match is not this post's): later, or given up. */
    const cannotTell = async (error: unknown): Promise<Date | null> => {
      const words = error instanceof PlatformError || error instanceof PlatformThrottled ? (error.platformMessage ?? error.message) : null;
      const checks = await recordCheckFailed(db, at, words === null ? null : clip(words));
      if (checks === 0) {
        d.status = undefined;
        return null;
      }
      if (checks >= maxChecks) {
        const failure = {
          kind: DELIVERY_FAILURE_KINDS.notConfirmed,
          error: `could not confirm whether the ${d.platform} channel received the post (${checks} lookups failed); check the channel before posting it again`,
          platformMessage: words ?? undefined,
          platformCode: error instanceof PlatformError ? error.platformCode : undefined,
        };
        d.status = (await recordFailed(db, at, failure, clock.now())) ? 'failed' : undefined;
        d.error = failure.error;
        emit({ kind: 'reconciled', ...refOf(post, d), outcome: 'not_confirmed' });
        return null;
      }
      return later(error instanceof PlatformThrottled ? Math.max(error.retryAfterMs, backoff[checks - 1]!) : backoff[checks - 1]!);
    };
    let found: Awaited<ReturnType<Connector['find']>>;
    try {
      if ('failure' in target) throw new PlatformError('needs_reconnect', target.failure.error);
      found = await withTimeout(
        (signal) => target.connector.find(post, target.channel, new Date(started.getTime() - skewMs), signal),
        timeoutMs,
        timeoutMs,
      ).result;
    } catch (error) {
      return cannotTell(error);
    }
    if (found) {
      // A twin post (same text, same channel) is the lookup's match too: its publication is never
      // taken for this delivery's (recordFound checks and writes under the channel's lock).
      const recorded = await recordFound(db, at, found, clock.now());
      if (recorded === 'another_post')
        return cannotTell(
          new LookupAmbiguous(`the ${d.platform} publication that matches is another post's (the same text on the same channel)`),
        );
      d.status = recorded === 'recorded' ? 'published' : undefined;
      emit({ kind: 'reconciled', ...refOf(post, d), outcome: 'found' });
      return null;
    }
    // The network has no such publication after the settle delay: the attempt never landed. It is
    // sent again, as a retry, unless the retries are used up.
    if (d.retries >= maxRetries) {
      const failure = {
        kind: 'platform_error',
        error: `sent ${d.retries + 1} times to the ${d.platform} channel without an answer that confirmed it, and the lookups found no such post: nothing was published`,
      };
      d.status = (await recordFailed(db, at, failure, clock.now())) ? 'failed' : undefined;
      d.error = failure.error;
      emit({ kind: 'reconciled', ...refOf(post, d), outcome: 'failed' });
      return null;
    }
    emit({ kind: 'reconciled', ...refOf(post, d), outcome: 'sent_again' });
    return (await send(post, d, target, claim, { retry: true })).retryAt;
  }

  async function work(post: OutgoingPost, deliveries: OpenDelivery[], claim: Claim): Promise<void> {
    if (options.mediaUrls) {
      const now = clock.now();
      for (const m of post.media) if (m.storageKey !== null) m.url = options.mediaUrls.url(m.id, now);
    }
    let retryAt: Date | null = null;
    // One channel after another: a network sees a post's deliveries in the order chosen. Each
    // delivery's write also marks the next one to send (one write per delivery, not two; the
    // writes of the round's posts share statements by group commit).
    const steps: Step[] = deliveries;
    // A delivery `publishing` under a fresh claim was marked by a publisher whose claim was taken
    // over while it marked (its mark raced the takeover's read): it may have been sent, so it is
    // looked up like any a stopped publisher left.
    for (const d of steps) {
      if (d.status !== 'publishing') continue;
      const at: DeliveryAt = { postId: post.id, channelId: d.channelId, status: 'publishing', attemptStartedAt: d.attemptStartedAt };
      d.status = (await recordWrite(db, deliveryWrites.unconfirmed(at, DELIVERY_FAILURE_KINDS.publisherStopped)))
        ? 'unconfirmed'
        : undefined;
    }
    const open = steps.filter((d) => d.status === 'pending' || d.status === 'unconfirmed');
    const targets = new Map<Step, Target>();
    const target = (d: Step) => targets.get(d) ?? targets.set(d, targetOf(d)).get(d)!;
    let marked: Date | undefined;
    for (const [i, d] of open.entries()) {
      let next: Date | null;
      if (d.status === 'unconfirmed') {
        next = await reconcile(post, d, claim);
        marked = undefined;
      } else {
        const after = open[i + 1];
        const following = after?.status === 'pending' && !('failure' in target(after)) ? after : undefined;
        const sent = await send(post, d, target(d), claim, { marked, following });
        next = sent.retryAt;
        marked = sent.markedNext;
      }
      if (next && (retryAt === null || next < retryAt)) retryAt = next;
    }
    // The outcome from what this round recorded; read again only if a write found the delivery
    // in another state than expected.
    const states = steps.every((d) => d.status !== undefined)
      ? steps.map((d) => ({ status: d.status!, platform: d.platform, name: d.name, error: d.error }))
      : await deliveryStates(db, post.id);
    const status = postOutcome(states.map((s) => s.status));
    const errors = states
      .filter((s) => s.status === 'failed')
      .map((s) => `${s.platform} channel ${s.name}: ${s.error}`)
      .join('; ');
    // Only a failed post has an error (posts' check): one still publishing shows its failed
    // channels in their deliveries until the others settle.
    await recordOutcome({ postId: post.id, claim, status, error: status === 'failed' ? errors || null : null, retryAt, now: clock.now() });
  }

  async function runOnce(): Promise<number> {
    const claim: Claim = { claimant, claimedAt: clock.now() };
    const reclaimed = await reclaimExpired(db, claim, new Date(claim.claimedAt.getTime() - leaseMs), maxAttempts, batchSize);
    if (reclaimed.length > 0) emit({ kind: 'taken_over', posts: reclaimed });
    const waited = reclaimed.length < batchSize ? await claimRetries(db, claim, batchSize - reclaimed.length) : [];
    const taken = reclaimed.length + waited.length;
    const due = taken < batchSize ? await claimDue(db, claim, batchSize - taken) : [];
    const claimed = [...reclaimed, ...waited, ...due];
    const posts = await loadWork(db, claimed);
    // Settled, not raced: a round (and so stop()) ends only when every post's work has.
    const outcomes = await Promise.allSettled(posts.map(({ post, deliveries }) => work(post, deliveries, claim)));
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed) throw failed.reason;
    return claimed.length;
  }

  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();

  const tick = () => {
    round = runOnce()
      .then(
        (claimed) => claimed,
        (error: unknown) => {
          options.onError?.(error);
          return 0;
        },
      )
      .then((claimed) => {
        // A full batch means more may be waiting: go again at once.
        if (running) timer = setTimeout(tick, claimed >= batchSize ? 0 : intervalMs);
      });
  };

  return {
    start() {
      if (running) return;
      running = true;
      tick();
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      await round;
    },
    runOnce,
  };
}
