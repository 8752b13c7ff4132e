// Reads a `channel` line: a workspace's social account.

import { SOCIAL_PLATFORMS } from '../../channels/channel.ts';
import type { FieldReader } from '../field-reader.ts';
import type { ChannelRecord } from '../records.ts';

export function readChannel(r: FieldReader): ChannelRecord {
  const handle = r.raw('handle');
  const record: ChannelRecord = {
    type: 'channel',
    line: r.line,
    id: r.id('channel'),
    workspaceId: r.ref('workspaceId'),
    platform: r.oneOf('platform', SOCIAL_PLATFORMS),
    name: r.name('name'),
    handle: null,
    connected: r.bool('connected', true),
  };
  if (handle !== undefined && handle !== null) record.handle = r.name('handle');
  return record;
}
