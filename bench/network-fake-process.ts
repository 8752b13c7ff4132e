// One organic network's loopback fake in a process of its own, for bench/publisher.ts: it must
// outlive the publisher processes the bench kills, count what was published on it, and not share
// the publishers' CPU accounting. Argument: JSON {network: 'meta' | 'google_business', channels: N}:
// N Facebook Pages each with a linked Instagram account (src/integrations/meta-pages/sandbox.ts),
// or N Business Profile locations (src/integrations/google-business/sandbox.ts). Spawned with an
// IPC channel; it sends {type: 'ready', …} (its url and the credentials of every channel), then
// answers the bench's questions ({id, op}) from the fake's own publication lists:
//   - op 'find', items [{channel, text}]: the publication of that text on that channel, or null;
//   - op 'publications': every publication, by channel (the network's id of it);
//   - op 'requests': the requests served, by method and route shape.
// Serves until SIGTERM.
import { startGoogleBusinessSandbox } from '../src/integrations/google-business/sandbox.ts';
import { startMetaPagesSandbox } from '../src/integrations/meta-pages/sandbox.ts';

export interface FakeReady {
  type: 'ready';
  url: string;
  /** Meta: a user token of the login that manages the Pages (the connection's). Google: the refresh token of the login that manages the locations. */
  connectionToken: string;
  /** Google's OAuth client (the token endpoint is the fake's). */
  clientId?: string;
  clientSecret?: string;
  /** Meta: each Page, its linked Instagram account and its Page token. Google: each location name. */
  channels: { id: string; instagramId?: string; token?: string }[];
}

/** One publication as the fake holds it: the network's id, the text (message, caption, summary) and when it was made. */
export interface FakePublication {
  id: string;
  text: string;
  at: number;
}

const shape = JSON.parse(process.argv[2] ?? '{}') as { network: 'meta' | 'google_business'; channels: number };
if (!process.send) throw new Error('network-fake-process.ts runs with an IPC channel (spawned by bench/publisher.ts)');

let publicationsOf: (channel: string) => FakePublication[];
let channelIds: string[];
let requests: { method: string; path: string }[];
let route: (r: { method: string; path: string }) => string;
let close: () => Promise<void>;
let ready: FakeReady;

if (shape.network === 'meta') {
  const pages = Array.from({ length: shape.channels }, (_, i) => ({
    id: String(1_100_000_000 + i),
    name: `Bench Page ${i}`,
    instagram: { id: `178414${String(i).padStart(11, '0')}`, username: `bench${i}` },
  }));
  const meta = await startMetaPagesSandbox({ pages });
  const pageIds = new Set(pages.map((p) => p.id));
  const igIds = new Set(pages.map((p) => p.instagram.id));
  publicationsOf = (channel) => meta.organic.publications(channel).map((p) => ({ id: p.id, text: p.text, at: p.createdAt.getTime() }));
  channelIds = [...pageIds, ...igIds];
  requests = meta.requests;
  // /v26.0/{node}/{edge}: which node it is tells the Page, Instagram account, container, post and media calls apart.
  route = ({ method, path }) => {
    const [, version, node, ...rest] = path.split('/');
    if (node === undefined || !/^\d/.test(node)) return `${method} ${path}`;
    const kind = pageIds.has(node)
      ? '{page-id}'
      : igIds.has(node)
        ? '{ig-user-id}'
        : node.includes('_')
          ? '{page-post-id}'
          : node.startsWith('18')
            ? '{ig-media-id}'
            : '{container-id}';
    return `${method} /${version}/${[kind, ...rest].join('/')}`;
  };
  close = () => meta.close();
  ready = {
    type: 'ready',
    url: meta.url,
    connectionToken: meta.issueToken(),
    channels: pages.map((p) => ({ id: p.id, instagramId: p.instagram.id, token: meta.organic.pageToken(p.id) })),
  };
} else {
  const business = await startGoogleBusinessSandbox({ generate: { locations: shape.channels, reviewsPerLocation: 0 } });
  publicationsOf = (channel) => business.posts(channel).map((p) => ({ id: p.name, text: p.summary, at: Date.parse(p.createTime) }));
  channelIds = business.locations().map((l) => l.name);
  requests = business.requests;
  route = ({ method, path }) => `${method} ${path.replace(/\d+/g, '{n}')}`;
  close = () => business.close();
  ready = {
    type: 'ready',
    url: business.url,
    connectionToken: business.issueRefreshToken(),
    clientId: business.clientId,
    clientSecret: business.clientSecret,
    channels: channelIds.map((id) => ({ id })),
  };
}

// The fakes keep their last 100,000 requests; tallied as they come so none is lost.
const served = new Map<string, number>();
const tally = () => {
  for (const r of requests.splice(0)) served.set(route(r), (served.get(route(r)) ?? 0) + 1);
};
setInterval(tally, 20).unref();

process.on('message', (message: { id: number; op: string; items?: { channel: string; text: string }[] }) => {
  let result: unknown;
  if (message.op === 'find') {
    const lists = new Map<string, FakePublication[]>();
    result = (message.items ?? []).map(({ channel, text }) => {
      if (!lists.has(channel)) lists.set(channel, publicationsOf(channel));
      return lists.get(channel)!.find((p) => p.text === text) ?? null;
    });
  } else if (message.op === 'publications') {
    result = Object.fromEntries(channelIds.map((id) => [id, publicationsOf(id)]));
  } else if (message.op === 'requests') {
    tally();
    result = Object.fromEntries(served);
  }
  process.send!({ id: message.id, result });
});
process.send(ready);
process.on('SIGTERM', () => void close().then(() => process.exit(0)));
