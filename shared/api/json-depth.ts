/**
 * Deepest nesting of arrays and objects a request body may have. Deeper JSON is refused before
 * it is parsed, so no recursive code (canonical JSON, schema checks) ever sees it.
 */
export const MAX_JSON_DEPTH = 64;

/** True when JSON text nests arrays/objects deeper than `limit` (brackets inside strings do not count). Linear, no recursion. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}
