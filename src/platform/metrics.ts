import type * as PromClient from 'prom-client';
import { METRICS_HUB_KEY_SERIES, METRICS_LATENCY_BUCKETS_S } from '../policy.ts';

// Prometheus metrics. The per-request counts are plain numbers in objects made once per route,
// method and status (or key), rendered as exposition text at scrape time: prom-client's
// `labels().inc()` hashes its label object on every call (about 3 µs a request for a counter and
// a histogram, against 0.05 µs here), and the Hub API's 304 has a CPU budget of 0.25 ms in all.
// prom-client keeps the rest: the process's metrics and the gauges read at scrape time.

/** The route label of a request that matched no route (404, 405): never the raw URL. */
export const UNMATCHED_ROUTE = '(unmatched)';

/** HTTP methods with a label of their own; anything else (Fastify answers it 404) is `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Where a route belongs, for the rate-limit refusals by surface. */
export type Surface = 'hub_api' | 'mcp' | 'oauth' | 'web' | 'main_api' | 'probe' | 'metrics';

export function surfaceOf(route: string): Surface {
  if (/\/v1\/hub(?:\/|$)/.test(route)) return 'hub_api';
  if (/\/mcp$/.test(route) || route.includes('/.well-known/oauth-protected-resource')) return 'mcp';
  if (/\/(?:oauth|\.well-known)(?:\/|$)/.test(route)) return 'oauth';
  if (/\/(?:app|embed|docs)(?:\/|$)/.test(route) || route === '/' || route === '/*') return 'web';
  if (/\/(?:healthz|readyz)$/.test(route)) return 'probe';
  if (route === '/metrics') return 'metrics';
  return 'main_api';
}

/** One route and method: answers by status, and the latency histogram. */
class RouteCell {
  readonly byStatus = new Map<number, number>();
  readonly buckets = new Float64Array(METRICS_LATENCY_BUCKETS_S.length);
  count = 0;
  sum = 0;

  record(status: number, seconds: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    this.count++;
    this.sum += seconds;
    // Non-cumulative here (one slot per bucket); summed when rendered.
    for (let i = 0; i < METRICS_LATENCY_BUCKETS_S.length; i++) {
      if (seconds <= METRICS_LATENCY_BUCKETS_S[i]!) {
        this.buckets[i]!++;
        return;
      }
    }
  }
}

/**
 * Requests by route template, method and status, and their latency by route and method. Routes
 * are the app's route templates (plus UNMATCHED_ROUTE), methods the seven above plus OTHER,
 * statuses those the app answers: every label comes from a fixed set, never from the request's text.
 */
export class HttpMetrics {
  readonly #routes = new Map<string, { surface: Surface; byMethod: Map<string, RouteCell> }>();

  /** The recorder of one route, looked up once (at route registration), not per request. */
  route(route: string): (method: string, status: number, seconds: number) => void {
    let entry = this.#routes.get(route);
    if (!entry) {
      entry = { surface: surfaceOf(route), byMethod: new Map() };
      this.#routes.set(route, entry);
    }
    const byMethod = entry.byMethod;
    return (method, status, seconds) => {
      let cell = byMethod.get(method);
      if (cell === undefined) {
        if (!METHODS.has(method)) method = 'OTHER';
        cell = byMethod.get(method) ?? new RouteCell();
        byMethod.set(method, cell);
      }
      cell.record(status, seconds);
    };
  }

  render(): string {
    const requests = ['# HELP hubops_http_requests_total HTTP requests answered, by route template, method and status code.'];
    requests.push('# TYPE hubops_http_requests_total counter');
    const latency = ['# HELP hubops_http_request_duration_seconds Time from a request’s arrival to the end of its response.'];
    latency.push('# TYPE hubops_http_request_duration_seconds histogram');
    const refused = new Map<Surface, number>();
    for (const [route, { surface, byMethod }] of this.#routes) {
      for (const [method, cell] of byMethod) {
        const base = `route="${escapeLabel(route)}",method="${method}"`;
        for (const [status, n] of cell.byStatus) {
          requests.push(`hubops_http_requests_total{${base},status="${status}"} ${n}`);
          if (status === 429) refused.set(surface, (refused.get(surface) ?? 0) + n);
        }
        let cumulative = 0;
        for (let i = 0; i < METRICS_LATENCY_BUCKETS_S.length; i++) {
          cumulative += cell.buckets[i]!;
          latency.push(`hubops_http_request_duration_seconds_bucket{${base},le="${METRICS_LATENCY_BUCKETS_S[i]}"} ${cumulative}`);
        }
        latency.push(`hubops_http_request_duration_seconds_bucket{${base},le="+Inf"} ${cell.count}`);
        latency.push(`hubops_http_request_duration_seconds_sum{${base}} ${cell.sum}`);
        latency.push(`hubops_http_request_duration_seconds_count{${base}} ${cell.count}`);
      }
    }
    const limits = ['# HELP hubops_rate_limited_total Requests refused 429 by a rate limit, by surface.'];
    limits.push('# TYPE hubops_rate_limited_total counter');
    // Every surface always: a refusal count that appears only after the first refusal cannot be rate()d from zero.
    for (const surface of ['hub_api', 'mcp', 'oauth', 'web', 'main_api'] as const)
      limits.push(`hubops_rate_limited_total{surface="${surface}"} ${refused.get(surface) ?? 0}`);
    return [requests.join('\n'), latency.join('\n'), limits.join('\n')].join('\n\n');
  }
}

/** What a Hub API answer was, for the per-key counts: 304s and 429s apart from the rest. */
const RESULTS = ['ok', 'not_modified', 'rate_limited', 'client_error', 'server_error'] as const;

function resultOf(status: number): number {
  if (status === 304) return 1;
  if (status === 429) return 2;
  if (status >= 500) return 4;
  if (status >= 400) return 3;
  return 0;
}

/** The key label of the keys beyond METRICS_HUB_KEY_SERIES (a key id is `key_…`, never this). */
export const OTHER_KEYS = 'other';

/**
 * Hub API requests by the key's *id* (never the key) and result. The first METRICS_HUB_KEY_SERIES
 * keys this process admits get series of their own; later keys are counted under OTHER_KEYS. A
 * key keeps its series for the life of the process (a counter must never go down, so no key is
 * ever moved in or out of `other`).
 */
export class HubKeyMetrics {
  readonly #keys = new Map<string, Float64Array>();
  readonly #other = new Float64Array(RESULTS.length);

  record(keyId: string, status: number): void {
    let counts = this.#keys.get(keyId);
    if (counts === undefined) {
      if (this.#keys.size >= METRICS_HUB_KEY_SERIES) counts = this.#other;
      else this.#keys.set(keyId, (counts = new Float64Array(RESULTS.length)));
    }
    counts[resultOf(status)]!++;
  }

  render(): string {
    const lines = [
      '# HELP hubops_hub_api_requests_total Hub API requests by key id (the first keys this process admitted; the rest as key_id="other") and result.',
      '# TYPE hubops_hub_api_requests_total counter',
    ];
    const add = (keyId: string, counts: Float64Array) => {
      for (let i = 0; i < RESULTS.length; i++)
        lines.push(`hubops_hub_api_requests_total{key_id="${escapeLabel(keyId)}",result="${RESULTS[i]}"} ${counts[i]}`);
    };
    for (const [keyId, counts] of this.#keys) add(keyId, counts);
    add(OTHER_KEYS, this.#other);
    return lines.join('\n');
  }
}

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** Gauges read when scraped (the database pool, the background jobs' backlogs), by what reads them. */
export interface ScrapeGauges {
  /** Sets the gauges; may throw (e.g. the database is down): they are then left out, and `up` says 0. */
  collect(set: (name: string, value: number, labels?: Record<string, string>) => void): Promise<void> | void;
}

export interface GaugeSpec {
  name: string;
  help: string;
  labelNames?: string[];
}

/**
 * The metrics registry of one app: the process's metrics (prom-client's defaults), gauges read at
 * scrape time, and the per-request counts above.
 */
export class Metrics {
  readonly http = new HttpMetrics();
  readonly hubKeys = new HubKeyMetrics();
  readonly #client: typeof PromClient;
  readonly #registry: PromClient.Registry;
  readonly #gauges = new Map<string, PromClient.Gauge>();
  readonly #sources: { gauges: ScrapeGauges; up: PromClient.Gauge; name: string; names: string[] }[] = [];

  /** prom-client is loaded only when metrics are on (a start without them does not pay for it). */
  static async create(version: string): Promise<Metrics> {
    const module = await import('prom-client');
    return new Metrics((module.default ?? module) as typeof PromClient, version);
  }

  private constructor(client: typeof PromClient, version: string) {
    this.#client = client;
    this.#registry = new client.Registry();
    client.collectDefaultMetrics({ register: this.#registry });
    new client.Gauge({
      name: 'hubops_build_info',
      help: 'Always 1; the running version as a label.',
      labelNames: ['version'],
      registers: [this.#registry],
    })
      .labels(version)
      .set(1);
  }

  /** Gauges one source sets at each scrape; `hubops_scrape_source_up{source}` says whether it could. */
  addSource(source: string, specs: GaugeSpec[], gauges: ScrapeGauges): void {
    for (const spec of specs) {
      this.#gauges.set(
        spec.name,
        new this.#client.Gauge({ name: spec.name, help: spec.help, labelNames: spec.labelNames ?? [], registers: [this.#registry] }),
      );
    }
    let up = this.#registry.getSingleMetric('hubops_scrape_source_up') as PromClient.Gauge | undefined;
    up ??= new this.#client.Gauge({
      name: 'hubops_scrape_source_up',
      help: '1 when the gauges of this source could be read at the last scrape, 0 when not (they are then absent).',
      labelNames: ['source'],
      registers: [this.#registry],
    });
    this.#sources.push({ gauges, up, name: source, names: specs.map((s) => s.name) });
  }

  get contentType(): string {
    return this.#registry.contentType;
  }

  /** The exposition text: everything read now. */
  async scrape(): Promise<string> {
    await Promise.all(
      this.#sources.map(async ({ gauges, up, name, names }) => {
        const values: [string, number, Record<string, string> | undefined][] = [];
        try {
          await gauges.collect((metric, value, labels) => values.push([metric, value, labels]));
        } catch {
          // No stale figure passes for a fresh one.
          for (const metric of names) this.#gauges.get(metric)?.reset();
          up.labels(name).set(0);
          return;
        }
        // Set together after the read, so a failed read leaves none half-updated; a label set no
        // longer reported (a platform with no accounts now) goes away.
        for (const metric of names) this.#gauges.get(metric)?.reset();
        for (const [metric, value, labels] of values) {
          const gauge = this.#gauges.get(metric);
          if (!gauge) throw new Error(`metric ${metric} was not declared by ${name}`);
          if (labels) gauge.set(labels, value);
          else gauge.set(value);
        }
        up.labels(name).set(1);
      }),
    );
    return `${await this.#registry.metrics()}\n${this.http.render()}\n\n${this.hubKeys.render()}\n`;
  }
}
