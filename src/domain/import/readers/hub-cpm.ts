// Reads a `hubCpm` line: what a hub counts 1,000 impressions on a social platform as worth.

import { SOCIAL_PLATFORMS } from '../../channels/channel.ts';
import { INT32_MAX, type FieldReader } from '../field-reader.ts';
import type { HubCpmRecord } from '../records.ts';

export function readHubCpm(r: FieldReader): HubCpmRecord {
  return {
    type: 'hubCpm',
    line: r.line,
    hubId: r.ref('hubId'),
    platform: r.oneOf('platform', SOCIAL_PLATFORMS),
    cpmCents: r.cents('cpmCents', INT32_MAX),
  };
}
