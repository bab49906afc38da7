/**
 * docs/first-app.md ("Build your first app") shows each file of examples/consumer-app whole, and
 * `npm run test:consumer` runs that app: so each block of the page must be that file, byte for
 * byte, and every file of the app must be on the page (or named below as left out on purpose).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const app = join(root, 'examples/consumer-app');
const page = readFileSync(join(root, 'docs/first-app.md'), 'utf8');

/** Files of the app the page does not show, each with why. */
const NOT_ON_THE_PAGE: Record<string, string> = {
  'README.md': "the example's own notes",
  '.gitignore': 'it keeps the lock file out of this repository, which an app of its own should commit',
  'test/invoice.test.ts': 'the page names it; it tests the invoice handler as the workflow test does',
};

/** `<!-- file: PATH -->`, a caption line, then a fenced block: PATH → the block's text. */
function blocks(markdown: string): Map<string, string> {
  const found = new Map<string, string>();
  const pattern = /<!-- file: (\S+) -->\n`[^`\n]+`:\n\n```[a-z]*\n([\s\S]*?)```/g;
  for (const match of markdown.matchAll(pattern)) {
    const [, path, body] = match as unknown as [string, string, string];
    if (found.has(path)) throw new Error(`docs/first-app.md shows ${path} twice`);
    found.set(path, body);
  }
  const markers = markdown.match(/<!-- file: /g)?.length ?? 0;
  if (markers !== found.size)
    throw new Error(`docs/first-app.md has ${markers} file markers, ${found.size} well-formed`);
  return found;
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (['node_modules', 'cdk.out'].includes(entry.name) || entry.name.endsWith('.tgz')) return [];
    if (entry.name === 'package-lock.json') return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path) : [relative(app, path)];
  });
}

const shown = blocks(page);

describe('docs/first-app.md', () => {
  it.each([...shown.keys()])('shows %s exactly as examples/consumer-app has it', (path) => {
    expect(shown.get(path)).toBe(readFileSync(join(app, path), 'utf8'));
  });

  it('shows every file of the app, apart from those left out on purpose', () => {
    const expected = files(app)
      .filter((path) => !(path in NOT_ON_THE_PAGE))
      .sort();
    expect([...shown.keys()].sort()).toEqual(expected);
  });

  it('reads a changed block as different from the file (the comparison can fail)', () => {
    const changed = page.replace("type: 'collect-payment'", "type: 'collect-payments'");
    expect(changed).not.toBe(page);
    expect(blocks(changed).get('jobs/catalog.ts')).not.toBe(readFileSync(join(app, 'jobs/catalog.ts'), 'utf8'));
  });
});
