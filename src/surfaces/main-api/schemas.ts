import { Type, type TSchema } from 'typebox';
import { positionCursor } from '../../domain/keyset.ts';
import { cursorFormat } from '../shared/paging.ts';

// Schema pieces the main API's operations share.

/** The cursor format of a list paged by (timestamp, id) positions of `kind`. */
export const positionCursorFormat = (kind: string) => cursorFormat(`${kind}-cursor`, positionCursor(kind));

export const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
export const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
export const Id = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

export const workspaceFilter = Type.Optional(
  Id('Only this workspace. One outside your scope gives an empty result (as does an unknown id).'),
);
