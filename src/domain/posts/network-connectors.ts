import type { SocialPlatform } from '../../db/schema.ts';
import type { GoogleBusinessClient } from '../../integrations/google-business/client.ts';
import { createGoogleBusinessConnector } from '../../integrations/google-business/connector.ts';
import type { MetaPagesConnector } from '../../integrations/meta-pages/connector.ts';
import type { Connector } from './connector.ts';

/**
 * The organic networks' connectors, by platform, for channels connected to a network: Meta's Pages
 * connector for Facebook and Instagram, and Business Profile's when there is a Business Profile
 * client (Google OAuth set up). What src/app.ts gives the publisher's ChannelConnectors, and what
 * `npm run bench:publisher` publishes through.
 */
export function networkConnectors(
  metaPages: MetaPagesConnector,
  business: GoogleBusinessClient | undefined,
): Partial<Record<SocialPlatform, Connector>> {
  return { facebook: metaPages, instagram: metaPages, ...(business ? { google_business: createGoogleBusinessConnector(business) } : {}) };
}
