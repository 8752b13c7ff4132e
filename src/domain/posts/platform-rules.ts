// Each platform's rules for a post: its text limit, whether it needs media, its image cap, and for
// the networks hubops publishes to (Instagram, Facebook Pages, Business Profile) every rule the
// network documents. Those are declared once, with the networks' clients and the documents they
// come from (src/integrations/meta-pages/rules.ts, src/integrations/google-business/rules.ts: the
// connectors cannot import the domain), and checked twice with the same code: here when a post is
// made (post.ts), so a post a network would refuse is refused at once and not when it is due, and
// by the connector before it sends.
import type { SocialPlatform } from '../../db/schema.ts';
import type { NetworkPostRules } from '../../integrations/channel-platform.ts';
import { GOOGLE_BUSINESS_POST_RULES } from '../../integrations/google-business/rules.ts';
import { FACEBOOK_POST_RULES, INSTAGRAM_POST_RULES } from '../../integrations/meta-pages/rules.ts';

/** The networks' documented rules, by platform. */
export const NETWORK_RULES: Partial<Record<SocialPlatform, NetworkPostRules>> = {
  instagram: INSTAGRAM_POST_RULES,
  facebook: FACEBOOK_POST_RULES,
  google_business: GOOGLE_BUSINESS_POST_RULES,
};

/** Post text limits per platform, in characters (Unicode code points): the networks' own, and ours for the platforms not published to yet. */
export const TEXT_LIMITS: Record<SocialPlatform, number> = {
  instagram: INSTAGRAM_POST_RULES.maxTextChars,
  facebook: FACEBOOK_POST_RULES.maxTextChars,
  google_business: GOOGLE_BUSINESS_POST_RULES.maxTextChars,
  linkedin: 3_000,
  x: 280,
  tiktok: 2_200,
};

/** Platforms that cannot carry a text-only post. */
export const NEEDS_MEDIA: ReadonlySet<SocialPlatform> = new Set<SocialPlatform>([
  ...(Object.keys(NETWORK_RULES) as SocialPlatform[]).filter((p) => NETWORK_RULES[p]!.needsMedia),
  'tiktok',
]);

/** Platforms that take fewer images than a post may hold. */
export const MAX_IMAGES_ON: Partial<Record<SocialPlatform, number>> = { x: 4 };
