import type { AdPlatform, MediaContentType, SocialPlatform } from '../../db/schema.ts';
import { utcDate } from '../periods.ts';
import { NETWORK_RULES } from '../posts/platform-rules.ts';

// The demo's content: social channels, a media library, posts in every status, and 60 days of
// organic, paid and Google review figures, so every main API endpoint shows real numbers. Drawn
// from the seeded generator the rest of the demo uses, placed relative to the clock.

/** The seeded draws the demo uses (seed.ts's generator). */
export interface Dice {
  unit(): number;
  int(min: number, max: number): number;
  pick<T>(values: readonly T[]): T;
  chance(p: number): boolean;
}

export interface DemoLocation {
  hubId: string;
  workspaceId: string;
  city: string;
  /** Hub name in handles and page names, e.g. "Brewline". */
  brand: string;
  /** Runs paid campaigns. */
  spends: boolean;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const HISTORY_DAYS = 60;

const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '');
/** `ws_demo_brewline_01` → `brewline_01` */
const short = (workspaceId: string) => workspaceId.replace(/^ws_demo_/, '');

function channelsOf(
  location: DemoLocation,
  index: number,
): { id: string; platform: SocialPlatform; name: string; handle: string | null; connected: boolean }[] {
  const platforms: SocialPlatform[] = ['instagram', 'facebook', 'google_business'];
  if (index === 0) platforms.push('x', 'tiktok', 'linkedin');
  else if (index % 3 === 2) platforms.push('x');
  else if (index % 4 === 1) platforms.push('tiktok');
  return platforms.map((platform) => ({
    id: `chn_demo_${short(location.workspaceId)}_${platform}`,
    platform,
    name: platform === 'google_business' ? `${location.brand} – ${location.city}` : `${location.brand} ${location.city}`,
    handle: ['instagram', 'x', 'tiktok'].includes(platform) ? `@${slug(location.brand)}.${slug(location.city)}` : null,
    // One X connection expired: drafts may target it; scheduling to it is refused.
    connected: !(index === 2 && platform === 'x'),
  }));
}

const MEDIA: { name: string; contentType: MediaContentType; width: number; height: number; durationMs?: number }[] = [
  { name: 'latte-art.jpg', contentType: 'image/jpeg', width: 1080, height: 1080 },
  { name: 'storefront-morning.jpg', contentType: 'image/jpeg', width: 2048, height: 1365 },
  { name: 'pumpkin-spice-menu.png', contentType: 'image/png', width: 1080, height: 1350 },
  { name: 'barista-team.jpg', contentType: 'image/jpeg', width: 1600, height: 1067 },
  { name: 'cold-brew-pour.webp', contentType: 'image/webp', width: 1080, height: 1920 },
  { name: 'loyalty-card.png', contentType: 'image/png', width: 1200, height: 628 },
  { name: 'pastry-case.jpg', contentType: 'image/jpeg', width: 1080, height: 1080 },
  { name: 'steam-wand.gif', contentType: 'image/gif', width: 480, height: 480 },
  { name: 'pour-over-reel.mp4', contentType: 'video/mp4', width: 1080, height: 1920, durationMs: 14_500 },
  { name: 'grand-opening.mov', contentType: 'video/quicktime', width: 1920, height: 1080, durationMs: 31_200 },
];

const TEXTS = [
  'Fresh beans, fresh week. Come say hi to the morning crew ☕',
  'Pumpkin Spice is back! Tag a friend who has been counting down the days 🎃',
  'Rainy day? Our cold brew tastes just as good indoors. Open until 7pm.',
  'Meet Sam, our head barista, who has pulled over 40,000 shots and still smiles at every one.',
  'Double points on the loyalty app all weekend. Download it at the counter.',
  'New pastries from our local bakery partner land every Tuesday.',
  'Thank you for 5 years, neighbours! Free drip coffee all day Saturday.',
  'We are hiring baristas. Flexible hours, free coffee, great people. Ask in store.',
  'Latte art throwdown this Friday at 6pm. Bring your best rosetta.',
  'Community Spotlight: we are collecting for the food bank all month.',
];

function hex(dice: Dice, digits: number): string {
  let out = '';
  while (out.length < digits) out += dice.int(0, 0xffff).toString(16).padStart(4, '0');
  return out.slice(0, digits);
}

function pickSome<T>(dice: Dice, values: readonly T[], min: number, max: number): T[] {
  const pool = [...values];
  const out: T[] = [];
  const n = Math.min(pool.length, dice.int(min, max));
  while (out.length < n) out.push(pool.splice(dice.int(0, pool.length - 1), 1)[0]!);
  return out;
}

const CPM: Record<string, Partial<Record<SocialPlatform, number>>> = {
  // Pulse has no LinkedIn CPM: its LinkedIn impressions earn no media value (shown as such).
  hub_demo_brewline: { instagram: 850, facebook: 720, linkedin: 1_500, x: 600, tiktok: 500, google_business: 400 },
  hub_demo_pulse: { instagram: 900, facebook: 780, x: 650, tiktok: 550, google_business: 450 },
};

const CAMPAIGNS: Record<string, { id: string; name: string; platform: AdPlatform; cpm: [number, number] }[]> = {
  hub_demo_brewline: [
    { id: 'cmp_bl_meta_pumpkin', name: 'Pumpkin Spice Launch - Meta', platform: 'meta', cpm: [600, 1_000] },
    { id: 'cmp_bl_google_loyalty', name: 'Loyalty App Installs - Search', platform: 'google_ads', cpm: [1_500, 3_000] },
  ],
  hub_demo_pulse: [
    { id: 'cmp_pf_meta_new_year', name: 'New Year, New You - Meta', platform: 'meta', cpm: [700, 1_200] },
    { id: 'cmp_pf_google_shred', name: 'Summer Shred - Search', platform: 'google_ads', cpm: [1_800, 3_500] },
  ],
};

// Star ratings of new reviews, most of them good.
const RATING_WEIGHTS = [5, 4, 8, 25, 58];

function rating(dice: Dice): number {
  let roll = dice.int(1, 100);
  for (let i = 0; i < RATING_WEIGHTS.length; i++) {
    roll -= RATING_WEIGHTS[i]!;
    if (roll <= 0) return i + 1;
  }
  return 5;
}

/** NDJSON-shaped objects for the demo's content; `locations` in hub then workspace order. */
export function contentRecords(dice: Dice, now: number, locations: DemoLocation[]): unknown[] {
  const records: unknown[] = [];
  const today = Date.parse(utcDate(new Date(now)));
  const days = Array.from({ length: HISTORY_DAYS }, (_, i) => today - (HISTORY_DAYS - 1 - i) * DAY);

  for (const [hubId, cpm] of Object.entries(CPM)) {
    for (const [platform, cpmCents] of Object.entries(cpm)) records.push({ type: 'hubCpm', hubId, platform, cpmCents });
  }

  const channelsByWorkspace = new Map<string, ReturnType<typeof channelsOf>>();
  const perHub = new Map<string, number>();
  for (const location of locations) {
    const index = perHub.get(location.hubId) ?? 0;
    perHub.set(location.hubId, index + 1);
    const channels = channelsOf(location, index);
    channelsByWorkspace.set(location.workspaceId, channels);
    for (const c of channels) records.push({ type: 'channel', workspaceId: location.workspaceId, ...c });
  }

  // A media library for the first location of each hub (the demo member's workspace first).
  const firsts = locations.filter((l, i) => i === 0 || locations[i - 1]!.hubId !== l.hubId);
  const mediaByWorkspace = new Map<string, { id: string; video: boolean; contentType: string }[]>();
  for (const location of firsts) {
    const library = location === firsts[0] ? MEDIA : MEDIA.filter((_, i) => i % 3 === 0);
    const assets = library.map((m, i) => {
      const id = `med_demo_${short(location.workspaceId)}_${String(i + 1).padStart(2, '0')}`;
      const video = m.contentType.startsWith('video/');
      records.push({
        type: 'media',
        id,
        workspaceId: location.workspaceId,
        contentType: m.contentType,
        filename: m.name,
        byteSize: video ? dice.int(8, 60) * 1_048_576 + dice.int(0, 1_048_575) : dice.int(180_000, 2_400_000),
        width: m.width,
        height: m.height,
        ...(m.durationMs ? { durationMs: m.durationMs } : {}),
        sha256: hex(dice, 64),
        createdAt: new Date(now - dice.int(20, 90) * DAY).toISOString(),
      });
      return { id, video, contentType: m.contentType };
    });
    mediaByWorkspace.set(location.workspaceId, assets);
  }

  // Posts: most in the first location of each hub, a few elsewhere; every status.
  const postPlan: { location: DemoLocation; status: 'draft' | 'scheduled' | 'published' | 'failed' }[] = [];
  const plan = (location: DemoLocation, status: (typeof postPlan)[number]['status'], n: number) => {
    for (let i = 0; i < n; i++) postPlan.push({ location, status });
  };
  for (const location of firsts) {
    const main = location === firsts[0];
    plan(location, 'published', main ? 10 : 4);
    plan(location, 'scheduled', main ? 5 : 2);
    plan(location, 'draft', main ? 3 : 1);
    plan(location, 'failed', 1);
  }
  for (const location of locations.filter((l) => !firsts.includes(l)).slice(0, 4)) plan(location, 'published', 1);

  postPlan.forEach(({ location, status }, n) => {
    const connected = channelsByWorkspace.get(location.workspaceId)!.filter((c) => c.connected);
    const targets = pickSome(dice, connected, 1, 3);
    const library = mediaByWorkspace.get(location.workspaceId) ?? [];
    const needsMedia = targets.some((c) => c.platform === 'instagram' || c.platform === 'tiktok');
    let mediaIds: string[] = [];
    if (library.length > 0 && (needsMedia || dice.chance(0.5))) {
      const videos = library.filter((m) => m.video);
      mediaIds =
        videos.length > 0 && dice.chance(0.25)
          ? [dice.pick(videos).id]
          : pickSome(
              dice,
              library.filter((m) => !m.video),
              1,
              targets.some((c) => c.platform === 'x') ? 3 : 4,
            ).map((m) => m.id);
    }
    const reachable =
      needsMedia && mediaIds.length === 0 ? targets.filter((c) => c.platform !== 'instagram' && c.platform !== 'tiktok') : targets;
    const id = `post_demo_${String(n + 1).padStart(3, '0')}`;
    const text = dice.pick(TEXTS);
    // A post hubops will send goes only to the channels whose network takes it, as the API insists
    // (Instagram takes JPEG images only, Business Profile no video): the demo's PNG, WebP, GIF and
    // video go to the others.
    const media = mediaIds.map((mediaId) => library.find((m) => m.id === mediaId)!);
    const toCheck = {
      text,
      media: media.map((m) => ({ kind: m.video ? ('video' as const) : ('image' as const), contentType: m.contentType })),
    };
    const channelIds = (
      status === 'draft' || status === 'scheduled'
        ? reachable.filter((c) => (NETWORK_RULES[c.platform]?.broken(toCheck).length ?? 0) === 0)
        : reachable
    ).map((c) => c.id);
    if (channelIds.length === 0 && status !== 'draft') return;
    const at = (offset: number) => new Date(Math.floor((now + offset) / 60_000) * 60_000).toISOString();
    const base = { type: 'post', id, workspaceId: location.workspaceId, text, channelIds, mediaIds };
    if (status === 'published') {
      const publishedAt = at(-dice.int(1, 28) * DAY - dice.int(0, 12) * HOUR);
      records.push({
        ...base,
        status,
        scheduledAt: publishedAt,
        publishedAt,
        createdAt: new Date(Date.parse(publishedAt) - dice.int(1, 5) * DAY).toISOString(),
        externalIds: Object.fromEntries(channelIds.map((c, i) => [c, `sandbox_demo_${String(n + 1).padStart(3, '0')}_${i + 1}`])),
      });
    } else if (status === 'scheduled') {
      records.push({ ...base, status, scheduledAt: at(dice.int(2, 14 * 24) * HOUR), createdAt: at(-dice.int(1, 48) * HOUR) });
    } else if (status === 'failed') {
      records.push({
        ...base,
        status,
        scheduledAt: at(-dice.int(2, 10) * DAY),
        error: 'the platform rejected the access token; reconnect the channel and schedule the post again',
      });
    } else {
      records.push({
        ...base,
        status,
        ...(dice.chance(0.5) ? { scheduledAt: at(dice.int(3, 20) * DAY) } : {}),
        createdAt: at(-dice.int(1, 72) * HOUR),
      });
    }
  });

  for (const location of locations) {
    const channels = channelsByWorkspace.get(location.workspaceId)!;
    const audience = dice.int(400, 3_000);
    for (const day of days) {
      const date = utcDate(new Date(day));
      // Today is partial: the figures are in for the hours so far.
      const share = day === today ? (now - day) / DAY : 1;
      const weekend = [0, 6].includes(new Date(day).getUTCDay()) ? 1.25 : 1;
      for (const c of channels) {
        const impressions = Math.round(audience * weekend * (c.platform === 'google_business' ? 0.6 : 1) * (0.6 + dice.unit()) * share);
        const reach = Math.round(impressions * (0.55 + dice.unit() * 0.25));
        records.push({
          type: 'organicMetrics',
          workspaceId: location.workspaceId,
          date,
          platform: c.platform,
          posts: share === 1 && dice.chance(0.3) ? 1 : 0,
          impressions,
          reach,
          likes: Math.round(reach * (0.02 + dice.unit() * 0.03)),
          comments: Math.round(reach * (0.002 + dice.unit() * 0.004)),
          shares: Math.round(reach * (0.001 + dice.unit() * 0.003)),
          saves: Math.round(reach * (0.001 + dice.unit() * 0.004)),
        });
      }
      if (location.spends) {
        for (const campaign of CAMPAIGNS[location.hubId] ?? []) {
          if (!dice.chance(0.85)) continue;
          const spendCents = Math.round(dice.int(800, 4_500) * weekend * share);
          const impressions = Math.round((spendCents * 1_000) / dice.int(...campaign.cpm));
          const clicks = Math.round(impressions * (0.008 + dice.unit() * 0.017));
          records.push({
            type: 'paidMetrics',
            workspaceId: location.workspaceId,
            date,
            platform: campaign.platform,
            campaignId: campaign.id,
            campaignName: campaign.name,
            spendCents,
            impressions,
            clicks,
            results: Math.round(clicks * (0.05 + dice.unit() * 0.1)),
          });
        }
      }
    }

    // Reviews from before the history, on one day, then the last 60 days day by day.
    const backlog: Record<string, number> = { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0 };
    for (let i = dice.int(40, 260); i > 0; i--) backlog[rating(dice)]! += 1;
    const backlogCount = Object.values(backlog).reduce((a, b) => a + b, 0);
    records.push({
      type: 'reviewDay',
      workspaceId: location.workspaceId,
      date: utcDate(new Date(days[0]! - 400 * DAY)),
      newReviews: backlog,
      responded: Math.round(backlogCount * 0.7),
    });
    for (const day of days) {
      if (!dice.chance(0.45)) continue;
      const newReviews: Record<string, number> = {};
      let responded = 0;
      for (let i = dice.int(1, 3); i > 0; i--) {
        const stars = String(rating(dice));
        newReviews[stars] = (newReviews[stars] ?? 0) + 1;
        // Recent reviews are less likely to have been answered yet.
        if (dice.chance(today - day < 3 * DAY ? 0.3 : 0.75)) responded += 1;
      }
      records.push({ type: 'reviewDay', workspaceId: location.workspaceId, date: utcDate(new Date(day)), newReviews, responded });
    }
  }
  return records;
}
