import { Type, type TSchema } from 'typebox';
import type { CursorKind } from '../../domain/keyset.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../policy.ts';
import { cursorParameter, type CursorFormat } from './inputs.ts';

// How every list pages, on every surface (REST, OpenAPI, MCP): a `limit` of 1 to MAX_PAGE_SIZE
// rows (DEFAULT_PAGE_SIZE when not given), an opaque `cursor` checked as a string format with
// every other field (published as the shape every cursor has; read into a ListCursor when
// checked), and the answer `{data, nextCursor}`. The cursors themselves (signed, one kind per
// list) are the domain's: domain/keyset.ts.

/** The refusal of a cursor that is not one the list issued (a list whose cursors carry its kind). */
const NOT_THIS_LISTS_CURSOR = 'is not a cursor issued by this API for this list; pass nextCursor from the previous page unchanged';
/** The same refusal, as the workspaces, hubs and opt-ins lists word it. */
export const NOT_OUR_CURSOR = 'is not a cursor issued by this API; pass nextCursor from the previous page unchanged';

/** Every cursor's shape (platform/cursor.ts): base64url text, a dot, a 22-character tag. */
const CURSOR_PATTERN = '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{22}$';

/** The string format `name` of a list's cursors, of `kind`. */
export function cursorFormat<P>(name: string, kind: CursorKind<P>, message: string = NOT_THIS_LISTS_CURSOR): CursorFormat<P> {
  return { name, kind, message };
}

const CURSOR = 'The nextCursor of the previous page, unchanged.';

/**
 * The paging parameters of a list: `limit` ("`what` per page") and `cursor` of the format given.
 * A list with filters (`filtered`) asks for the same filters on every page.
 */
export function pageParameters<P>(what: string, format: CursorFormat<P>, options: { filtered: boolean } = { filtered: true }) {
  return {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PAGE_SIZE,
        default: DEFAULT_PAGE_SIZE,
        description: `${what} per page, 1 to ${MAX_PAGE_SIZE}.`,
      }),
    ),
    cursor: cursorParameter(
      format,
      Type.Optional(
        Type.String({
          pattern: CURSOR_PATTERN,
          maxLength: 1000,
          description: options.filtered ? `${CURSOR} Keep the other parameters the same while paging.` : CURSOR,
        }),
      ),
    ),
  };
}

/** `nextCursor`'s description in most lists. */
const NEXT_CURSOR = 'Pass as `cursor` to get the next page; null on the last page.';
/** `nextCursor`'s description as the workspaces and hubs lists word it. */
export const NEXT_CURSOR_SHORT = 'Pass as `cursor` for the next page; null on the last page.';

/** A page of `item`: `{data, nextCursor}`. */
export function Page<T extends TSchema>(item: T, nextCursor: string = NEXT_CURSOR) {
  return Type.Object({
    data: Type.Array(item),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: nextCursor }),
  });
}

/** The `limit` a list runs with: the caller's, else DEFAULT_PAGE_SIZE. */
export const limitOf = (input: { limit?: number | undefined }): number => input.limit ?? DEFAULT_PAGE_SIZE;
