// One rule for text arriving from outside, on every surface: it must be well-formed Unicode
// without control characters that PostgreSQL cannot store (NUL) or that no person types.
// Tab, line feed and carriage return stay allowed (post text, descriptions).

// C0 controls except \t \n \r, DEL, lone surrogates, and the Unicode noncharacters.
const FORBIDDEN =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufdd0-\ufdef\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `text` holds a character no input of ours accepts (NUL, other controls, lone surrogates, noncharacters). */
export function hasForbiddenCharacter(text: string): boolean {
  return FORBIDDEN.test(text);
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
