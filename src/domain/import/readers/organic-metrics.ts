// Reads an `organicMetrics` line: one day of a workspace's unpaid social figures on one platform.

import { SOCIAL_PLATFORMS } from '../../channels/channel.ts';
import { INT32_MAX, type FieldReader } from '../field-reader.ts';
import type { OrganicRecord } from '../records.ts';

export function readOrganicMetrics(r: FieldReader): OrganicRecord {
  return {
    type: 'organicMetrics',
    line: r.line,
    workspaceId: r.ref('workspaceId'),
    date: r.date('date'),
    platform: r.oneOf('platform', SOCIAL_PLATFORMS),
    posts: r.count('posts', INT32_MAX),
    impressions: r.count('impressions'),
    reach: r.count('reach'),
    likes: r.count('likes'),
    comments: r.count('comments'),
    shares: r.count('shares'),
    saves: r.count('saves'),
  };
}
