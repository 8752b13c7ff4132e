import type { SocialPlatform } from '../../db/schema.ts';

export const SOCIAL_PLATFORMS: readonly SocialPlatform[] = ['instagram', 'facebook', 'linkedin', 'x', 'tiktok', 'google_business'];

/** A workspace's connected social account (a Facebook page, an Instagram profile, …). */
export interface Channel {
  _id: string;
  workspaceId: string;
  platform: SocialPlatform;
  name: string;
  handle: string | null;
  connected: boolean;
  createdAt: string;
}
