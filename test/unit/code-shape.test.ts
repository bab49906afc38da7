/**
 * The delivery pipeline stays in small rooms (docs/architecture.md, "Where a new feature goes"):
 * each stage of the worker and each gate is a file of at most 250 lines with no function over 80,
 * and the three files every feature used to grow (the worker, the enqueue service, the job store)
 * stay under 300 lines. A change that grows one past its bound fails here, naming it: split it
 * by concern rather than raising the bound.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** The worker's stages and gates. */
const PIPELINE_DIRS = ['shared/runtime/delivery', 'shared/runtime/gates'];
const PIPELINE_FILES = ['shared/runtime/worker.ts'];
/** The files that held everything before they were split by concern. */
const ONCE_LARGE = ['shared/runtime/worker.ts', 'shared/api/jobs-service.ts', 'shared/aws/dynamo-job-store.ts'];

const FILE_LINES = 250;
const LARGE_FILE_LINES = 300;
const FUNCTION_LINES = 80;

function pipelineFiles(): string[] {
  const inDirs = PIPELINE_DIRS.flatMap((dir) =>
    readdirSync(join(ROOT, dir))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `${dir}/${name}`),
  );
  return [...PIPELINE_FILES, ...inDirs];
}

const linesOf = (file: string) => readFileSync(join(ROOT, file), 'utf8').split('\n').length;

/** Every function of `text` (declarations, methods, arrows, function expressions) longer than `max` lines. */
function longFunctions(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : `<anonymous at line ${start + 1}>`;
      if (lines > max) found.push(`${file}: ${name} is ${lines} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the shape of the delivery pipeline', () => {
  it(`has no stage or gate file over ${FILE_LINES} lines`, () => {
    const files = pipelineFiles();
    expect(files.length).toBeGreaterThan(10);
    const over = files.filter((file) => linesOf(file) > FILE_LINES).map((f) => `${f}: ${linesOf(f)} lines`);
    expect(over).toEqual([]);
  });

  it(`has no function over ${FUNCTION_LINES} lines`, () => {
    const long = pipelineFiles().flatMap((file) =>
      longFunctions(file, readFileSync(join(ROOT, file), 'utf8'), FUNCTION_LINES),
    );
    expect(long).toEqual([]);
  });

  it(`keeps the worker, the enqueue service and the job store under ${LARGE_FILE_LINES} lines`, () => {
    const over = ONCE_LARGE.map((file) => ({ file, lines: linesOf(file) })).filter((f) => f.lines > LARGE_FILE_LINES);
    expect(over).toEqual([]);
  });

  it('finds a long function (the check can fail)', () => {
    const body = Array.from({ length: FUNCTION_LINES + 1 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    expect(longFunctions('x.ts', `export function big() {\n${body}\n}\n`, FUNCTION_LINES)).toEqual([
      `x.ts: big is ${FUNCTION_LINES + 3} lines`,
    ]);
    expect(longFunctions('x.ts', 'const small = () => 1;\n', FUNCTION_LINES)).toEqual([]);
  });
});
