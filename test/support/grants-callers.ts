/**
 * The grants matrix's principals (test/support/grants-matrix.ts): who holds which grant, and the
 * credentials each signs with. Apart from the matrix, so the deployed target's global setup can
 * synthesize the app with these callers and verify their signatures without loading vitest.
 */
import type { Grant, GrantsDocument } from '../../shared/core/access';
import type { LocalCaller } from '../local-aws/function-url';
import { assumedRole, localRoleId } from '../local-aws/local-access';

export type Who = 'enqueue' | 'enqueueEcho' | 'signal' | 'controlEcho' | 'operate' | 'readEcho' | 'admin' | 'unlisted';
export const WHO: readonly Who[] = [
  'enqueue',
  'enqueueEcho',
  'signal',
  'controlEcho',
  'operate',
  'readEcho',
  'admin',
  'unlisted',
];

/** Each principal's grants (`unlisted` has none: it holds the invoke permission by some other policy). */
export const GRANTS: Readonly<Record<Exclude<Who, 'unlisted'>, readonly Grant[]>> = {
  enqueue: [{ action: 'enqueue' }],
  enqueueEcho: [{ action: 'enqueue', types: ['echo'] }],
  signal: [{ action: 'signal' }],
  controlEcho: [{ action: 'control', types: ['echo'], actions: ['cancel', 'bulk'] }],
  operate: [{ action: 'operate' }],
  readEcho: [{ action: 'read', types: ['echo'] }],
  admin: [{ action: 'admin' }],
};

/** The role each principal assumes (`svc-<who>`), in a session of its own. */
export const CALLERS = Object.fromEntries(
  WHO.map((who) => [who, assumedRole(`svc-${who}`, `session-${who}`)]),
) as Readonly<Record<Who, LocalCaller>>;

/** The role ARNs and their grants, as `-c orrery:callers` takes them (the deployed stack). */
export const CALLER_GRANTS: Readonly<Record<string, readonly Grant[]>> = Object.fromEntries(
  Object.entries(GRANTS).map(([who, grants]) => [localRoleId(`svc-${who}`), grants]),
);

/** The grants document the construct would write for them (the local platform). */
export const DOCUMENT: GrantsDocument = { v: 1, principals: CALLER_GRANTS };
