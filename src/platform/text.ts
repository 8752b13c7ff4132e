// One rule for text arriving from outside, on every surface: it must be well-formed Unicode
// without control characters that PostgreSQL cannot store (NUL) or that no person types.
// Tab, line feed and carriage return stay allowed (post text, descriptions).

// C0 controls except \t \n \r, DEL, lone surrogates, and the Unicode noncharacters.
export const FORBIDDEN_CHARACTERS =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufdd0-\ufdef\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `text` holds a character no input of ours accepts (NUL, other controls, lone surrogates, noncharacters). */
export function hasForbiddenCharacter(text: string): boolean {
  return FORBIDDEN_CHARACTERS.test(text);
}

/** The message every surface uses for such a field. */
export const FORBIDDEN_CHARACTER_MESSAGE = 'must not contain control characters (such as NUL), lone surrogates or Unicode noncharacters';

/**
 * The path (e.g. `items.2.name`, or `(input)` for a bare string) of the first string inside
 * `value` that breaks the rule, or undefined. Keys are checked too. Iterative, so hostile
 * nesting cannot overflow the stack.
 */
export function findForbiddenText(value: unknown): string | undefined {
  const stack: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') {
      if (hasForbiddenCharacter(current)) return path || '(input)';
    } else if (current && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        const childPath = path ? `${path}.${key}` : key;
        if (hasForbiddenCharacter(key)) return childPath;
        stack.push({ value: child, path: childPath });
      }
    }
  }
  return undefined;
}

// The rule for names, labels and titles (what people pick things by, in the admin, a CSV, a
// consent page): no invisible formatting characters, the Unicode format characters (general
// category Cf): bidi embeddings, overrides, isolates and marks (U+202A–U+202E, U+2066–U+2069,
// U+200E, U+200F, U+061C), zero-width spaces (U+200B, U+2060, U+FEFF), the soft hyphen, tag
// characters… They make a name show as another ("Acme\u202Egnp.exe"), or hide text that an AI
// assistant reading the name still sees. Kept: the joiners U+200C and U+200D, which scripts
// (Persian, Indic) and emoji sequences need, and the tags of an emoji flag sequence
// (🏴 + tags + U+E007F). Prose (post text) is not a name: it may carry them.
const HIDDEN_FORMAT = /(?![\u200c\u200d])\p{Cf}/gu;
const EMOJI_TAG_SEQUENCE = /\u{1F3F4}[\u{E0020}-\u{E007E}]+\u{E007F}/gu;

/** `name` without them: for names hubops cleans rather than refuses (an uploaded file's name). */
export function withoutHiddenFormatCharacters(name: string): string {
  let kept = '';
  let from = 0;
  for (const flag of name.matchAll(EMOJI_TAG_SEQUENCE)) {
    kept += name.slice(from, flag.index).replace(HIDDEN_FORMAT, '') + flag[0];
    from = flag.index + flag[0].length;
  }
  return kept + name.slice(from).replace(HIDDEN_FORMAT, '');
}

/** True when `name` holds an invisible formatting character a name may not (see above). */
export function hasHiddenFormatCharacter(name: string): boolean {
  return withoutHiddenFormatCharacters(name) !== name;
}

/** The message every surface uses for such a name. */
export const HIDDEN_FORMAT_MESSAGE = 'must not contain invisible formatting characters (bidi controls such as U+202E, zero-width spaces)';
