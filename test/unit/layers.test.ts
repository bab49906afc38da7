/**
 * The layers hold (docs/architecture.md, "Where a new feature goes"): no import cycle anywhere in
 * the project's source, and within shared/ every import goes down, from a folder to one of a
 * lower layer, never up or across. A new arrow that breaks either fails here, naming the files.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cyclesOf, type ImportGraph, importGraph, importsOf } from '../support/import-graph';

const ROOT = join(import.meta.dirname, '..', '..');

/** The source the rules read: everything shipped or run, not the tests (test/local-aws ships in the package). */
const SOURCE = [
  'shared',
  'infra',
  'functions',
  'bench',
  'ui/src',
  'ui/build.ts',
  'scripts',
  'packages/orrery',
  'test/local-aws',
];

/**
 * shared/'s layers, lowest first: a file may import its own folder and any folder of a lower
 * layer. Folders of one layer do not import each other.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['errors.ts', 'logger.ts'],
  ['core'],
  ['config.ts'],
  ['schedules'],
  ['aws', 'dispatch'],
  ['lambda'],
  ['runtime', 'api', 'supervisor'],
  ['client', 'entries'],
  ['dashboard'],
  ['cli'],
];

/**
 * Imports from shared/ into test/local-aws, which ships in the package as the local platform:
 * `orrery dev` starts it (loaded only when the command runs).
 */
const SHIPPED_LOCAL_PLATFORM = new Set(['shared/cli/commands/dev.ts -> test/local-aws/dev-server.ts']);

const folderOf = (file: string): string => file.split('/')[1] ?? file;
const layerOf = (folder: string): number => LAYERS.findIndex((layer) => layer.includes(folder));

/** Every arrow of shared/ that breaks the layering, as `from -> to (why)`. */
function layerBreaks(graph: ImportGraph): string[] {
  const breaks: string[] = [];
  for (const [file, targets] of graph) {
    if (!file.startsWith('shared/')) continue;
    for (const target of targets) {
      const arrow = `${file} -> ${target}`;
      if (!target.startsWith('shared/')) {
        if (!SHIPPED_LOCAL_PLATFORM.has(arrow)) breaks.push(`${arrow} (shared/ imports outside shared/)`);
        continue;
      }
      const [from, to] = [folderOf(file), folderOf(target)];
      if (from === to) continue;
      const [a, b] = [layerOf(from), layerOf(to)];
      if (a < 0 || b < 0) breaks.push(`${arrow} (shared/${a < 0 ? from : to} is in no layer: add it to LAYERS)`);
      else if (b >= a)
        breaks.push(`${arrow} (${b === a ? 'across one layer' : 'up'}: ${from} is below or beside ${to})`);
    }
  }
  return breaks.sort();
}

describe('the layers', () => {
  const graph = importGraph(ROOT, SOURCE);

  it('reads the whole source: every shared/ folder and the package entries', () => {
    expect(graph.size).toBeGreaterThan(200);
    const folders = new Set([...graph.keys()].filter((f) => f.startsWith('shared/')).map(folderOf));
    for (const folder of folders) expect(layerOf(folder), `shared/${folder} has a layer`).toBeGreaterThanOrEqual(0);
    expect(graph.get('shared/entries/runtime.ts')).toContain('shared/api/lambda.ts');
    // the one arrow out of shared/ is read (a dynamic import), and allowed by name
    expect(graph.get('shared/cli/commands/dev.ts')).toContain('test/local-aws/dev-server.ts');
  });

  it('has no import cycle', () => {
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('has every import of shared/ go down a layer', () => {
    expect(layerBreaks(graph)).toEqual([]);
  });

  it('holds: the adapters import no API, worker or supervisor; schedules import nothing above them', () => {
    const from = (prefix: string) => [...graph].filter(([file]) => file.startsWith(prefix));
    for (const [file, targets] of from('shared/aws/')) {
      for (const target of targets) expect(target, file).not.toMatch(/^shared\/(api|runtime|supervisor)\//);
    }
    for (const [file, targets] of from('shared/schedules/')) {
      for (const target of targets) expect(target, file).not.toMatch(/^shared\/(api|runtime|supervisor|aws)\//);
    }
  });
});

describe('the checks can fail', () => {
  it('finds a cycle, however long, and a file importing itself', () => {
    const graph: ImportGraph = new Map([
      ['a.ts', new Set(['b.ts'])],
      ['b.ts', new Set(['c.ts'])],
      ['c.ts', new Set(['a.ts', 'd.ts'])],
      ['d.ts', new Set<string>()],
      ['e.ts', new Set(['e.ts'])],
    ]);
    expect(cyclesOf(graph)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  });

  it('finds an arrow up, one across a layer, and one out of shared/', () => {
    const graph: ImportGraph = new Map([
      ['shared/aws/x.ts', new Set(['shared/api/y.ts', 'shared/dispatch/z.ts', 'shared/core/ok.ts'])],
      ['shared/core/w.ts', new Set(['test/support/fakes.ts'])],
    ]);
    expect(layerBreaks(graph)).toEqual([
      'shared/aws/x.ts -> shared/api/y.ts (up: aws is below or beside api)',
      'shared/aws/x.ts -> shared/dispatch/z.ts (across one layer: aws is below or beside dispatch)',
      'shared/core/w.ts -> test/support/fakes.ts (shared/ imports outside shared/)',
    ]);
  });

  it('reads import and export statements and import() calls, not examples in comments', () => {
    const text = [
      "import { a } from './a';",
      "import type { B } from '../b';",
      "export { c } from './c';",
      "import './side-effect';",
      "const d = await import('./d');",
      " * import { e } from './e';",
      "import {\n  f,\n  g,\n} from './fg';",
    ].join('\n');
    expect(importsOf(text).sort()).toEqual(['../b', './a', './c', './d', './fg', './side-effect']);
  });
});
