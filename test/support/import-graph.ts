/**
 * The import graph of the project's own source (not its tests), read from the import and export
 * statements of each file: enough for the layering rules of test/unit/layers.test.ts, with no
 * dependency of its own. Type-only imports count: a cycle of types is still a cycle to read.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/** File (repository-relative, `/`-separated) → the repository files it imports. */
export type ImportGraph = Map<string, Set<string>>;

const SOURCE = /\.(ts|tsx|mts|mjs)$/;
const SKIP = new Set(['node_modules', 'dist', 'cdk.out', '.orrery']);

function walk(root: string, dir: string, out: string[]): void {
  for (const name of readdirSync(join(root, dir))) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) walk(root, path, out);
    else if (SOURCE.test(name) && !/\.(test|spec)\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
}

/**
 * The module specifiers a file imports: `import … from '…'` and `export … from '…'` statements
 * that start a line (so an example in a doc comment is not one), and `import('…')` calls.
 */
export function importsOf(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]/gm)) found.push(m[1] as string);
  for (const m of text.matchAll(/^import\s+['"]([^'"]+)['"]/gm)) found.push(m[1] as string);
  for (const m of text.matchAll(/(?<![\w.*])import\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1] as string);
  return found;
}

/** The file a relative specifier names (`./x` → `x.ts`, `x.tsx`, `x/index.ts`…), if it exists. */
function resolveSpecifier(root: string, from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = normalize(join(dirname(from), specifier)).replace(/\\/g, '/');
  const stem = base.replace(/\.(js|mjs)$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.mjs`, `${base}/index.ts`];
  return candidates.find((path) => existsSync(join(root, path)) && statSync(join(root, path)).isFile());
}

/** The graph of every source file under `dirs` (each relative to `root`). */
export function importGraph(root: string, dirs: readonly string[]): ImportGraph {
  const files: string[] = [];
  for (const dir of dirs) {
    if (statSync(join(root, dir)).isDirectory()) walk(root, dir, files);
    else files.push(dir);
  }
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const targets = new Set<string>();
    for (const specifier of importsOf(readFileSync(join(root, file), 'utf8'))) {
      const target = resolveSpecifier(root, file, specifier);
      if (target) targets.add(relative('.', target).replace(/\\/g, '/'));
    }
    graph.set(file.replace(/\\/g, '/'), targets);
  }
  return graph;
}

/** Every cycle of the graph, each once, as the files around it (Tarjan's strongly connected components). */
export function cyclesOf(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || graph.get(file)?.has(file)) cycles.push(component.sort());
    }
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return cycles;
}
