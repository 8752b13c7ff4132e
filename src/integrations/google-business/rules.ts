// Business Profile's rules for a local post, with the documents they come from: checked when a post
// is made (src/domain/posts/post.ts) and by the connector before anything is sent (./connector.ts),
// from this one declaration.
import { characters, type NetworkPostRules, type PostToCheck, type RuleBroken } from '../channel-platform.ts';

/**
 * A local post's summary holds at most 1,500 characters: the description limit of a post in the
 * Business Profile (Business Profile Help, "Create & manage posts",
 * https://support.google.com/business/answer/7342169; 1,500 characters since 2018, when Google
 * replaced the 100–300 word rule). Surprising for an API: the LocalPost reference's `summary`
 * states no length, yet a longer one is refused with INVALID_ARGUMENT.
 */
export const GOOGLE_BUSINESS_SUMMARY_MAX = 1500;
/**
 * Photos per local post we send. Google documents no count (LocalPost.media is a list, "sourceUrl
 * is the only supported data field"); 10 is the post's own limit here (src/domain/posts/post.ts
 * MAX_IMAGES), so no post that could be scheduled is refused for its photos alone.
 */
export const GOOGLE_BUSINESS_PHOTOS_MAX = 10;

/** A STANDARD local post: a summary and photos (`mediaFormat: PHOTO`; this API posts no video). */
export const GOOGLE_BUSINESS_POST_RULES: NetworkPostRules = {
  network: 'Google Business Profile',
  maxTextChars: GOOGLE_BUSINESS_SUMMARY_MAX,
  needsMedia: false,
  broken(post: PostToCheck): RuleBroken[] {
    const out: RuleBroken[] = [];
    const video = post.media.findIndex((m) => m.kind === 'video');
    if (video >= 0) out.push({ part: 'media', mediaIndex: video, message: 'Google Business Profile posts take photos, not video' });
    const length = characters(post.text);
    if (length > GOOGLE_BUSINESS_SUMMARY_MAX)
      out.push({
        part: 'text',
        message: `Google Business Profile posts hold at most ${GOOGLE_BUSINESS_SUMMARY_MAX} characters (this one has ${length})`,
      });
    if (post.text.trim() === '' && post.media.length === 0)
      out.push({ part: 'text', message: 'a Google Business Profile post needs text or a photo' });
    if (post.media.length > GOOGLE_BUSINESS_PHOTOS_MAX)
      out.push({ part: 'media', message: `Google Business Profile posts take at most ${GOOGLE_BUSINESS_PHOTOS_MAX} photos` });
    return out;
  },
};
