// Instagram's and Facebook Pages' documented rules for a post, with the documents they come from:
// checked when a post is made (src/domain/posts/post.ts) and by the client before anything is sent
// (./client.ts), from this one declaration.
import { characters, type NetworkPostRules, type PostToCheck, type RuleBroken } from '../channel-platform.ts';

/**
 * The caption: IG User › Media
 * (https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media),
 * parameter `caption`: "Maximum 2200 characters, 30 hashtags, and 20 @ tags."
 */
export const INSTAGRAM_CAPTION_MAX_CHARS = 2200;
export const INSTAGRAM_MAX_HASHTAGS = 30;
export const INSTAGRAM_MAX_MENTIONS = 20;
/**
 * Surprising, as the Instagram app takes 20 items in a carousel since 2024: the API takes 10.
 * Content Publishing › Carousel posts (https://developers.facebook.com/docs/instagram-platform/content-publishing/):
 * "Carousels are limited to 10 images, videos, or a mix of the two"; IG User › Media, `children`:
 * "An array of up to 10 container IDs".
 */
export const INSTAGRAM_CAROUSEL_MAX_ITEMS = 10;
/**
 * Surprising too: PNG, WebP and GIF images, which the media library keeps and Facebook Pages take,
 * are refused. Content Publishing › Limitations
 * (https://developers.facebook.com/docs/instagram-platform/content-publishing/): "JPEG is the only
 * image format supported. Extended JPEG formats such as MPO and JPS are not supported."; IG User ›
 * Media › Image specifications: "Format: JPEG".
 */
export const INSTAGRAM_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg']);
/**
 * Facebook Page posts: the Graph API reference of /{page-id}/feed and /photos states no message
 * limit; 63,206 characters is what Facebook itself takes in a post, the largest any network here does.
 */
export const FACEBOOK_MESSAGE_MAX_CHARS = 63_206;

const HASHTAG = /(^|\s)#[^\s#]+/gu;
const MENTION = /(^|\s)@[\w.]+/gu;

/** Instagram publishes images and videos (Content Publishing: an image, a reel, a carousel), never text alone. */
export const INSTAGRAM_POST_RULES: NetworkPostRules = {
  network: 'Instagram',
  maxTextChars: INSTAGRAM_CAPTION_MAX_CHARS,
  needsMedia: true,
  broken(post: PostToCheck): RuleBroken[] {
    const out: RuleBroken[] = [];
    if (post.media.length === 0)
      out.push({ part: 'media', message: 'Instagram publishes images and videos only: a post without media cannot go to Instagram' });
    if (post.media.length > INSTAGRAM_CAROUSEL_MAX_ITEMS)
      out.push({
        part: 'media',
        message: `An Instagram carousel published through the API has at most ${INSTAGRAM_CAROUSEL_MAX_ITEMS} images or videos (this post has ${post.media.length})`,
      });
    const notJpeg = post.media.findIndex(
      (m) => m.kind === 'image' && m.contentType !== undefined && !INSTAGRAM_IMAGE_TYPES.has(m.contentType),
    );
    if (notJpeg >= 0)
      out.push({
        part: 'media',
        mediaIndex: notJpeg,
        message: `Instagram takes JPEG images only (this post has ${post.media[notJpeg]!.contentType}): attach the image as a JPEG`,
      });
    const length = characters(post.text);
    if (length > INSTAGRAM_CAPTION_MAX_CHARS)
      out.push({
        part: 'text',
        message: `An Instagram caption has at most ${INSTAGRAM_CAPTION_MAX_CHARS} characters (this one has ${length})`,
      });
    const hashtags = (post.text.match(HASHTAG) ?? []).length;
    if (hashtags > INSTAGRAM_MAX_HASHTAGS)
      out.push({ part: 'text', message: `An Instagram caption has at most ${INSTAGRAM_MAX_HASHTAGS} hashtags (this one has ${hashtags})` });
    const mentions = (post.text.match(MENTION) ?? []).length;
    if (mentions > INSTAGRAM_MAX_MENTIONS)
      out.push({
        part: 'text',
        message: `An Instagram caption has at most ${INSTAGRAM_MAX_MENTIONS} @ mentions (this one has ${mentions})`,
      });
    return out;
  },
};

/** A Page post is text, a link, images, or one video (Pages API › Posts; Video API › Publishing). */
export const FACEBOOK_POST_RULES: NetworkPostRules = {
  network: 'Facebook',
  maxTextChars: FACEBOOK_MESSAGE_MAX_CHARS,
  needsMedia: false,
  broken(post: PostToCheck): RuleBroken[] {
    const out: RuleBroken[] = [];
    const length = characters(post.text);
    if (length > FACEBOOK_MESSAGE_MAX_CHARS)
      out.push({ part: 'text', message: `A Facebook post has at most ${FACEBOOK_MESSAGE_MAX_CHARS} characters (this one has ${length})` });
    const video = post.media.findIndex((m) => m.kind === 'video');
    if (video >= 0 && post.media.length > 1)
      out.push({ part: 'media', message: 'A Facebook Page post carries one video alone, or images only' });
    if (post.media.length === 0 && post.text.trim() === '') out.push({ part: 'text', message: 'A Facebook post needs text or media' });
    return out;
  },
};
