import type { Question } from '../playbooks/playbook.ts';
import type { AdAccountSyncState } from '../spend/spend.ts';
import type { BudgetType } from '../opt-ins/budget-types.ts';
import { contentRecords, type DemoLocation } from './content-seed.ts';
import { OPT_IN_STATUSES, type OptInRow, type OptInStatus } from '../opt-ins/opt-in.ts';
import { utcDate } from '../periods.ts';

// The demo data set: one franchise group with a coffee brand and a fitness brand. It is written
// through the NDJSON import (as objects), so it obeys exactly the rules imported data obeys.
// Everything is drawn from a seeded PRNG and placed relative to the clock: the same data every
// time, always "recent". Ids are fixed, which is what makes seeding idempotent.

export const DEMO_ACCOUNT_ID = 'acc_demo';
const DEMO_ADMIN_EMAIL = 'admin@demo.hubops.dev';
const DEMO_MEMBER_EMAIL = 'member@demo.hubops.dev';
const DEMO_PASSWORD = 'hubops-demo';

const BREWLINE = 'hub_demo_brewline';
const PULSE = 'hub_demo_pulse';
/** The demo hub admin's hub: the one the server's banner names on every start. */
export const DEMO_HUB_ID = BREWLINE;
const ADMIN_ID = 'usr_demo_admin';
const MEMBER_ID = 'usr_demo_member';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const HISTORY_DAYS = 60;

export interface DemoSeed {
  /** False when the demo data was already there (nothing was written). */
  created: boolean;
  accountId: string;
  /** The admin's hub first. */
  hubIds: string[];
  workspaceIds: string[];
  playbookIds: string[];
  adAccountIds: string[];
  userIds: string[];
  adminEmail: string;
  adminPassword: string;
  memberEmail: string;
  memberPassword: string;
}

// ---------------------------------------------------------------------------------------------
// The fixed part: locations, fields, playbooks, ad accounts.

interface Location {
  city: string;
  region: string;
  timezone: string;
}

const BREWLINE_LOCATIONS: Location[] = [
  { city: 'Denver Downtown', region: 'Mountain', timezone: 'America/Denver' },
  { city: 'Boulder Pearl Street', region: 'Mountain', timezone: 'America/Denver' },
  { city: 'Fort Collins', region: 'Mountain', timezone: 'America/Denver' },
  { city: 'Colorado Springs', region: 'Mountain', timezone: 'America/Denver' },
  { city: 'Salt Lake City', region: 'Mountain', timezone: 'America/Denver' },
  { city: 'Phoenix Camelback', region: 'Southwest', timezone: 'America/Phoenix' },
  { city: 'Tucson', region: 'Southwest', timezone: 'America/Phoenix' },
  { city: 'Albuquerque', region: 'Southwest', timezone: 'America/Denver' },
  { city: 'Seattle Capitol Hill', region: 'Pacific', timezone: 'America/Los_Angeles' },
  { city: 'Portland Pearl District', region: 'Pacific', timezone: 'America/Los_Angeles' },
  { city: 'San Diego Gaslamp', region: 'Pacific', timezone: 'America/Los_Angeles' },
  { city: 'Sacramento Midtown', region: 'Pacific', timezone: 'America/Los_Angeles' },
  { city: 'Boise', region: 'Mountain', timezone: 'America/Boise' },
  { city: 'Austin South Congress', region: 'Central', timezone: 'America/Chicago' },
  { city: 'Dallas Uptown', region: 'Central', timezone: 'America/Chicago' },
  { city: 'Kansas City Crossroads', region: 'Central', timezone: 'America/Chicago' },
  { city: 'Minneapolis North Loop', region: 'Central', timezone: 'America/Chicago' },
  { city: 'Chicago Wicker Park', region: 'Central', timezone: 'America/Chicago' },
  { city: 'Omaha', region: 'Central', timezone: 'America/Chicago' },
  { city: 'Nashville Gulch', region: 'East', timezone: 'America/Chicago' },
  { city: 'Atlanta Midtown', region: 'East', timezone: 'America/New_York' },
  { city: 'Charlotte South End', region: 'East', timezone: 'America/New_York' },
  // The newest locations: no field values yet, no spend yet.
  { city: 'Raleigh Warehouse District', region: 'East', timezone: 'America/New_York' },
  { city: 'Pittsburgh Strip District', region: 'East', timezone: 'America/New_York' },
];

const PULSE_LOCATIONS: Location[] = [
  { city: 'Austin North', region: 'Texas', timezone: 'America/Chicago' },
  { city: 'Houston Heights', region: 'Texas', timezone: 'America/Chicago' },
  { city: 'San Antonio Pearl', region: 'Texas', timezone: 'America/Chicago' },
  { city: 'Dallas Deep Ellum', region: 'Texas', timezone: 'America/Chicago' },
  { city: 'Fort Worth Near Southside', region: 'Texas', timezone: 'America/Chicago' },
  { city: 'Oklahoma City Midtown', region: 'Plains', timezone: 'America/Chicago' },
  { city: 'Tulsa Brady Arts', region: 'Plains', timezone: 'America/Chicago' },
  { city: 'Miami Brickell', region: 'Florida', timezone: 'America/New_York' },
  { city: 'Tampa Hyde Park', region: 'Florida', timezone: 'America/New_York' },
  { city: 'Orlando Thornton Park', region: 'Florida', timezone: 'America/New_York' },
  { city: 'Jacksonville Riverside', region: 'Florida', timezone: 'America/New_York' },
  { city: 'Las Vegas Summerlin', region: 'West', timezone: 'America/Los_Angeles' },
  { city: 'Los Angeles Silver Lake', region: 'West', timezone: 'America/Los_Angeles' },
  { city: 'San Jose Willow Glen', region: 'West', timezone: 'America/Los_Angeles' },
  { city: 'Reno Midtown', region: 'West', timezone: 'America/Los_Angeles' },
  // Opened last week: no spend yet.
  { city: 'Scottsdale Old Town', region: 'West', timezone: 'America/Phoenix' },
];

const BREWLINE_WITHOUT_VALUES = 2;
const slug = (city: string) => city.toLowerCase().replace(/[^a-z0-9]+/g, '-');
const workspaceId = (hub: 'brewline' | 'pulse', index: number) => `ws_demo_${hub}_${String(index + 1).padStart(2, '0')}`;
const brewlineIds = BREWLINE_LOCATIONS.map((_, i) => workspaceId('brewline', i));
const pulseIds = PULSE_LOCATIONS.map((_, i) => workspaceId('pulse', i));

interface DemoPlaybook {
  id: string;
  hubId: string;
  /** Exactly as stored; some carry trailing spaces, as real playbook names do. */
  name: string;
  solutions: string[];
  budgetType: BudgetType | null;
  variants?: Record<string, string[]>;
  questions?: Question[];
  /** Answers to draw from, per short-answer question. */
  answers?: Record<string, string[]>;
}

const PLAYBOOKS: DemoPlaybook[] = [
  {
    id: 'pb_demo_pumpkin_spice',
    hubId: BREWLINE,
    name: 'Pumpkin Spice Launch ',
    solutions: ['meta'],
    budgetType: 'lifetime',
    variants: { audience: ['Commuters', 'Students', 'Families'] },
    questions: [
      {
        question: 'Which drink should the ads feature?',
        type: 'single_select',
        required: true,
        options: ['Pumpkin Spice Latte', 'Pumpkin Cold Brew', 'Chai Pumpkin Swirl'],
      },
    ],
  },
  { id: 'pb_demo_loyalty_app', hubId: BREWLINE, name: 'Loyalty App Installs', solutions: ['google_ads'], budgetType: 'daily' },
  {
    id: 'pb_demo_grand_opening',
    hubId: BREWLINE,
    name: 'Grand Opening Blitz',
    solutions: ['meta', 'google_ads'],
    budgetType: 'lifetime',
    variants: { offer: ['Free drip coffee', 'BOGO lattes'] },
    questions: [
      { question: 'Store hours?', type: 'short_answer', required: true },
      { question: 'Anything customers should know about parking?', type: 'short_answer', required: false },
    ],
    answers: {
      'Store hours?': ['6am-6pm', '6:30am-7pm', '7am-5pm', '5:30am-8pm'],
      'Anything customers should know about parking?': [
        'Free lot behind the store',
        'Street parking only',
        '2 hours free in the garage',
        'Drive-thru open',
      ],
    },
  },
  { id: 'pb_demo_ask_ai', hubId: BREWLINE, name: 'Ask-AI Coffee Finder', solutions: ['chatgpt_ads'], budgetType: 'daily' },
  {
    id: 'pb_demo_community',
    hubId: BREWLINE,
    name: 'Community Spotlight Posts  ',
    solutions: ['organic_social'],
    budgetType: null,
    questions: [{ question: 'Which local cause do you support?', type: 'short_answer', required: true }],
    answers: {
      'Which local cause do you support?': ['Food bank', 'Animal shelter', 'Youth soccer league', 'Library reading club', 'Park clean-up'],
    },
  },
  {
    id: 'pb_demo_new_year',
    hubId: PULSE,
    name: 'New Year, New You',
    solutions: ['meta'],
    budgetType: 'lifetime',
    variants: { offer: ['First month free', '50% off joining fee'], audience: ['Beginners', 'Returning members'] },
    questions: [
      { question: 'Which classes should we promote?', type: 'multi_select', required: true, options: ['HIIT', 'Spin', 'Yoga', 'Strength'] },
    ],
  },
  {
    id: 'pb_demo_summer_shred',
    hubId: PULSE,
    name: 'Summer Shred Challenge ',
    solutions: ['google_ads'],
    budgetType: 'daily',
    variants: { creative: ['Video', 'Carousel'] },
  },
  {
    id: 'pb_demo_member_stories',
    hubId: PULSE,
    name: 'Member Stories',
    solutions: ['organic_social'],
    budgetType: null,
    questions: [{ question: 'Member first name (with consent)?', type: 'short_answer', required: true }],
    answers: { 'Member first name (with consent)?': ['Maria', 'Dev', 'Sam', 'Priya', 'Luis', 'Keisha'] },
  },
];

interface DemoAdAccount {
  id: string;
  hubId: string;
  platform: string;
  name: string;
  syncState: AdAccountSyncState;
  /** How long ago the last completed sync was. */
  syncedAgo: number;
}

// Brewline's figures are fresh; Pulse shows an account mid-sync and one whose sync keeps failing.
const AD_ACCOUNTS: DemoAdAccount[] = [
  {
    id: 'aa_demo_brewline_meta',
    hubId: BREWLINE,
    platform: 'meta',
    name: 'Brewline Coffee - Meta',
    syncState: 'idle',
    syncedAgo: 20 * 60_000,
  },
  { id: 'aa_demo_pulse_meta', hubId: PULSE, platform: 'meta', name: 'Pulse Fitness - Meta', syncState: 'syncing', syncedAgo: 5 * HOUR },
  {
    id: 'aa_demo_pulse_google',
    hubId: PULSE,
    platform: 'google_ads',
    name: 'Pulse Fitness - Google Ads',
    syncState: 'failed',
    syncedAgo: 3 * DAY + 4 * HOUR,
  },
];

// ---------------------------------------------------------------------------------------------
// The drawn part.

/** mulberry32: a tiny, well-distributed 32-bit PRNG; good for data, not for secrets. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

// Current status mix, weighted like a live network: mostly live, a long tail of everything else.
const STATUS_WEIGHTS: [OptInStatus, number][] = [
  ['active', 40],
  ['completed', 8],
  ['in_review', 8],
  ['cancelled', 6],
  ['questions_only', 6],
  ['pending', 5],
  ['pending_billing', 5],
  ['paused', 5],
  ['deploying', 4],
  ['partially-deployed', 3],
  ['failed', 3],
  ['cancelling', 2],
  ['cleanup_failed', 1],
];
const CLOSED_STATUSES: [OptInStatus, number][] = [
  ['completed', 50],
  ['cancelled', 40],
  ['failed', 10],
];

/** How long after opting in each status is typically reached, in ms: [min, max]. */
const TIME_TO_STATUS: Record<OptInStatus, [number, number]> = {
  pending: [0, 2 * HOUR],
  pending_billing: [10 * 60_000, 2 * DAY],
  in_review: [HOUR, DAY],
  deploying: [HOUR, 6 * HOUR],
  active: [2 * HOUR, 5 * DAY],
  'partially-deployed': [2 * HOUR, 2 * DAY],
  failed: [HOUR, 2 * DAY],
  cleanup_failed: [2 * HOUR, 3 * DAY],
  paused: [2 * DAY, 15 * DAY],
  cancelling: [DAY, 10 * DAY],
  cancelled: [2 * DAY, 20 * DAY],
  completed: [7 * DAY, 30 * DAY],
  questions_only: [0, 0],
};

class Draw {
  readonly #next: () => number;
  constructor(seed: number) {
    this.#next = prng(seed);
  }
  unit(): number {
    return this.#next();
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.#next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#next() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.#next() < p;
  }
  weighted<T>(options: [T, number][]): T {
    let roll = this.#next() * options.reduce((sum, [, w]) => sum + w, 0);
    for (const [value, weight] of options) {
      roll -= weight;
      if (roll < 0) return value;
    }
    return options[options.length - 1]![0];
  }
}

/** An opt-in as the import takes it: the Hub API row's own fields, with ids for its playbook and workspace. */
type DemoOptIn = { type: 'optIn'; playbookId: string; workspaceId: string } & Omit<OptInRow, 'playbook' | 'workspace'>;

function optIns(draw: Draw, now: number): DemoOptIn[] {
  const out: DemoOptIn[] = [];
  const make = (playbook: DemoPlaybook, workspace: string, status: OptInStatus, optedInAt: number, latest: number) => {
    const [min, max] = TIME_TO_STATUS[status];
    const updatedAt = Math.min(latest, optedInAt + draw.int(min, max));
    const budgeted = playbook.budgetType !== null && status !== 'questions_only';
    const variant = Object.fromEntries(
      Object.entries(playbook.variants ?? {}).map(([dimension, options]) => [dimension, draw.pick(options)]),
    );
    const responses = (playbook.questions ?? []).map((q) => {
      if (q.type === 'short_answer') return { question: q.question, answer: draw.pick(playbook.answers?.[q.question] ?? ['Yes']) };
      if (q.type === 'single_select') return { question: q.question, answer: draw.pick(q.options!) };
      return { question: q.question, answer: q.options!.filter(() => draw.chance(0.5)).join(', ') || q.options![0]! };
    });
    out.push({
      type: 'optIn',
      id: `oi_demo_${String(out.length + 1).padStart(4, '0')}`,
      playbookId: playbook.id,
      workspaceId: workspace,
      status,
      optedInAt: new Date(optedInAt).toISOString(),
      updatedAt: new Date(updatedAt).toISOString(),
      budgetCents: !budgeted ? null : playbook.budgetType === 'lifetime' ? draw.int(40, 300) * 500 : draw.int(10, 60) * 100,
      budgetType: budgeted ? playbook.budgetType : null,
      variant,
      responses,
    });
  };

  const current: DemoOptIn[] = [];
  for (const playbook of PLAYBOOKS) {
    for (const workspace of playbook.hubId === BREWLINE ? brewlineIds : pulseIds) {
      if (!draw.chance(0.85)) continue;
      // One in twenty opted in within the last six hours, so "today" is never empty for long.
      const optedInAt = now - (draw.chance(0.05) ? draw.int(0, 6 * HOUR) : draw.int(0, HISTORY_DAYS * DAY));
      // Earlier, finished opt-ins of the same workspace (a workspace may opt in again once the
      // previous one has ended), each over before the next began.
      const earlier = draw.weighted<number>([
        [0, 40],
        [1, 45],
        [2, 15],
      ]);
      let start = now - HISTORY_DAYS * DAY;
      for (let i = 0; i < earlier; i++) {
        const room = optedInAt - 2 * DAY - start;
        if (room <= 0) break;
        const at = start + draw.int(0, Math.floor(room / (earlier - i)));
        make(playbook, workspace, draw.weighted(CLOSED_STATUSES), at, optedInAt - DAY);
        start = Date.parse(out[out.length - 1]!.updatedAt) + DAY;
      }
      let status = draw.weighted(STATUS_WEIGHTS);
      if (status === 'questions_only' && !playbook.questions) status = 'active';
      make(playbook, workspace, status, optedInAt, now);
      current.push(out[out.length - 1]!);
    }
  }

  // Every status must appear at least once; turn live opt-ins into the missing ones.
  for (const status of OPT_IN_STATUSES) {
    if (out.some((o) => o.status === status)) continue;
    const candidates = current.filter((o) => o.status === 'active' && (status !== 'questions_only' || o.responses.length > 0));
    const target = draw.pick(candidates);
    target.status = status;
    if (status === 'questions_only') {
      target.budgetCents = null;
      target.budgetType = null;
      target.updatedAt = target.optedInAt;
    }
  }
  return out;
}

function spend(
  draw: Draw,
  now: number,
): { type: 'spend'; adAccountId: string; workspaceId: string | null; date: string; spendCents: number }[] {
  const out: { type: 'spend'; adAccountId: string; workspaceId: string | null; date: string; spendCents: number }[] = [];
  const spending = new Set([...brewlineIds.slice(0, -BREWLINE_WITHOUT_VALUES), ...pulseIds.slice(0, -1)]);
  for (const account of AD_ACCOUNTS) {
    const workspaces = (account.hubId === BREWLINE ? brewlineIds : pulseIds).filter((id) => spending.has(id));
    const scale = new Map(workspaces.map((id) => [id, draw.int(800, 4_500)]));
    const syncedAt = now - account.syncedAgo;
    const lastDay = Date.parse(utcDate(new Date(syncedAt)));
    for (let day = Date.parse(utcDate(new Date(now))) - (HISTORY_DAYS - 1) * DAY; day <= lastDay; day += DAY) {
      const date = utcDate(new Date(day));
      // The last synced day is partial: only the hours up to the sync are in.
      const share = day === lastDay ? (syncedAt - day) / DAY : 1;
      const weekend = [0, 6].includes(new Date(day).getUTCDay()) ? 1.3 : 1;
      for (const workspace of workspaces) {
        if (!draw.chance(0.8)) continue;
        const cents = Math.round(scale.get(workspace)! * weekend * (0.6 + draw.unit() * 0.8) * share);
        out.push({ type: 'spend', adAccountId: account.id, workspaceId: workspace, date, spendCents: cents });
      }
      // Campaigns the platform could not match to a location.
      if (draw.chance(0.7))
        out.push({ type: 'spend', adAccountId: account.id, workspaceId: null, date, spendCents: Math.round(draw.int(100, 1_500) * share) });
    }
  }
  return out;
}

const CONTENT_SEED = 20_261_102;

function demoLocations(): DemoLocation[] {
  const spending = new Set([...brewlineIds.slice(0, -BREWLINE_WITHOUT_VALUES), ...pulseIds.slice(0, -1)]);
  return [
    ...BREWLINE_LOCATIONS.map((l, i) => ({
      hubId: BREWLINE,
      workspaceId: brewlineIds[i]!,
      city: l.city,
      brand: 'Brewline',
      spends: spending.has(brewlineIds[i]!),
    })),
    ...PULSE_LOCATIONS.map((l, i) => ({
      hubId: PULSE,
      workspaceId: pulseIds[i]!,
      city: l.city,
      brand: 'Pulse Fitness',
      spends: spending.has(pulseIds[i]!),
    })),
  ];
}

/**
 * Brewline's imported Meta account. Where the demo's Meta sandbox connects Brewline's Meta accounts
 * (ad-demo.ts) it is left out: the synced accounts are Brewline's Meta, so it would count Meta
 * spend twice, and its last sync, fixed at the seed, would pin Brewline's asOf and make it stale
 * after 6 hours while the synced accounts stay fresh.
 */
export const BREWLINE_IMPORTED_META = 'aa_demo_brewline_meta';

export interface DataSetOptions {
  /** The Meta sandbox connects Brewline's Meta accounts: no imported Meta account for Brewline. */
  brewlineMetaSynced?: boolean;
}

/** The demo data set as NDJSON import objects, placed relative to `now` (ms). */
export function dataSet(now: number, options: DataSetOptions = {}): unknown[] {
  const records = allRecords(now);
  if (!options.brewlineMetaSynced) return records;
  // Drawn all the same and then left out, so every other figure stays what it is without the sandbox.
  return records.filter((r) => {
    const record = r as { type: string; id?: string; adAccountId?: string };
    return !(record.type === 'adAccount' && record.id === BREWLINE_IMPORTED_META) && record.adAccountId !== BREWLINE_IMPORTED_META;
  });
}

function allRecords(now: number): unknown[] {
  const draw = new Draw(20_261_101);
  const records: unknown[] = [
    { type: 'account', id: DEMO_ACCOUNT_ID, name: 'Summit Franchise Group', plan: 'partner', apiAccess: true },
    { type: 'hub', id: BREWLINE, accountId: DEMO_ACCOUNT_ID, name: 'Brewline Coffee' },
    { type: 'hub', id: PULSE, accountId: DEMO_ACCOUNT_ID, name: 'Pulse Fitness' },
    { type: 'workspaceField', hubId: BREWLINE, key: 'region', label: 'Region' },
    { type: 'workspaceField', hubId: BREWLINE, key: 'store_number', label: 'Store number' },
    { type: 'workspaceField', hubId: BREWLINE, key: 'manager_email', label: 'Manager email' },
    { type: 'workspaceField', hubId: BREWLINE, key: 'drive_thru', label: 'Drive-thru' },
    // Archived after the POS migration; the old values stay stored but are no longer shown.
    { type: 'workspaceField', hubId: BREWLINE, key: 'legacy_pos_id', label: 'Legacy POS id', archived: true },
    { type: 'workspaceField', hubId: PULSE, key: 'region', label: 'Region' },
    { type: 'workspaceField', hubId: PULSE, key: 'studio_number', label: 'Studio number' },
    { type: 'workspaceField', hubId: PULSE, key: 'manager_email', label: 'Manager email' },
    { type: 'workspaceField', hubId: PULSE, key: 'square_feet', label: 'Square feet' },
  ];
  BREWLINE_LOCATIONS.forEach((location, i) => {
    const withValues = i < BREWLINE_LOCATIONS.length - BREWLINE_WITHOUT_VALUES;
    const fields = withValues
      ? {
          region: location.region,
          store_number: `BL-${String(101 + i).padStart(4, '0')}`,
          manager_email: `${slug(location.city)}@brewline.example`,
          drive_thru: draw.chance(0.4),
          ...(draw.chance(0.7) ? { legacy_pos_id: `POS-${draw.int(1000, 9999)}` } : {}),
        }
      : {};
    records.push({
      type: 'workspace',
      id: brewlineIds[i],
      hubId: BREWLINE,
      name: `Brewline ${location.city}`,
      timezone: location.timezone,
      fields,
    });
  });
  PULSE_LOCATIONS.forEach((location, i) => {
    records.push({
      type: 'workspace',
      id: pulseIds[i],
      hubId: PULSE,
      name: `Pulse Fitness ${location.city}`,
      timezone: location.timezone,
      fields: {
        region: location.region,
        studio_number: 201 + i,
        manager_email: `${slug(location.city)}@pulsefitness.example`,
        ...(draw.chance(0.75) ? { square_feet: draw.int(18, 45) * 500 } : {}),
      },
    });
  });
  for (const p of PLAYBOOKS) {
    records.push({
      type: 'playbook',
      id: p.id,
      hubId: p.hubId,
      name: p.name,
      solutions: p.solutions,
      variants: p.variants ?? {},
      questions: p.questions ?? [],
    });
  }
  for (const a of AD_ACCOUNTS) {
    records.push({
      type: 'adAccount',
      id: a.id,
      hubId: a.hubId,
      platform: a.platform,
      name: a.name,
      syncState: a.syncState,
      lastSyncedAt: new Date(now - a.syncedAgo).toISOString(),
    });
  }
  records.push(
    {
      type: 'user',
      id: ADMIN_ID,
      email: DEMO_ADMIN_EMAIL,
      password: DEMO_PASSWORD,
      firstname: 'Avery',
      lastname: 'Chen',
      hubId: BREWLINE,
      role: 'hub_admin',
    },
    {
      type: 'user',
      id: MEMBER_ID,
      email: DEMO_MEMBER_EMAIL,
      password: DEMO_PASSWORD,
      firstname: 'Jordan',
      lastname: 'Patel',
      hubId: BREWLINE,
      role: 'member',
      workspaceId: brewlineIds[0],
    },
  );
  records.push(...optIns(draw, now), ...spend(draw, now));
  // Content draws from its own sequence, so the data above stays as it was.
  records.push(...contentRecords(new Draw(CONTENT_SEED), now, demoLocations()));
  return records;
}

export const SEED: Omit<DemoSeed, 'created'> = {
  accountId: DEMO_ACCOUNT_ID,
  hubIds: [BREWLINE, PULSE],
  workspaceIds: [...brewlineIds, ...pulseIds],
  playbookIds: PLAYBOOKS.map((p) => p.id),
  adAccountIds: AD_ACCOUNTS.map((a) => a.id),
  userIds: [ADMIN_ID, MEMBER_ID],
  adminEmail: DEMO_ADMIN_EMAIL,
  adminPassword: DEMO_PASSWORD,
  memberEmail: DEMO_MEMBER_EMAIL,
  memberPassword: DEMO_PASSWORD,
};
