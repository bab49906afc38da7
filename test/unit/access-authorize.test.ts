import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AccessRequest,
  adminDocument,
  authorize,
  CONTROL_ACTIONS,
  type ControlAction,
  type Grant,
  type GrantsDocument,
  grantsOf,
  type Principal,
  typeScope,
} from '../../shared/core/access';

const principal = (id: string): Principal => ({ id, account: '123456789012', arn: id });
const BILLING = 'arn:aws:iam::123456789012:role/billing';

describe('authorize', () => {
  type Row = [string, readonly Grant[], AccessRequest, { allowed: true } | { type?: string; reason: RegExp }];
  const rows: Row[] = [
    ['enqueue on any type', [{ action: 'enqueue' }], { action: 'enqueue', types: ['a', 'b'] }, { allowed: true }],
    [
      'enqueue scoped: granted type',
      [{ action: 'enqueue', types: ['a'] }],
      { action: 'enqueue', types: ['a'] },
      { allowed: true },
    ],
    [
      'enqueue scoped: names the first type not granted',
      [{ action: 'enqueue', types: ['a'] }],
      { action: 'enqueue', types: ['a', 'c', 'b'] },
      { type: 'c', reason: /^enqueue is not granted on job type "c"$/ },
    ],
    [
      'two scoped grants add up',
      [
        { action: 'enqueue', types: ['a'] },
        { action: 'enqueue', types: ['b'] },
      ],
      { action: 'enqueue', types: ['b', 'a'] },
      { allowed: true },
    ],
    [
      'a scoped grant beside an unscoped one: every type',
      [{ action: 'read', types: ['a'] }, { action: 'read' }],
      { action: 'read', types: 'all' },
      { allowed: true },
    ],
    [
      'scoped read of every type is refused and names the granted types',
      [{ action: 'read', types: ['b', 'a'] }],
      { action: 'read', types: 'all' },
      { reason: /^read is granted only on job types "a", "b"; name them$/ },
    ],
    [
      'enqueue does not give signal',
      [{ action: 'enqueue' }],
      { action: 'signal', types: ['a'] },
      { reason: /^no grant allows signal$/ },
    ],
    [
      'control narrowed to cancel refuses retry',
      [{ action: 'control', actions: ['cancel'] }],
      { action: 'control', control: 'retry', types: ['a'] },
      { reason: /^no grant allows control \(retry\)$/ },
    ],
    [
      'control narrowed to cancel allows cancel',
      [{ action: 'control', actions: ['cancel'], types: ['a'] }],
      { action: 'control', control: 'cancel', types: ['a'] },
      { allowed: true },
    ],
    [
      'control on a type not granted',
      [{ action: 'control', types: ['a'] }],
      { action: 'control', control: 'bulk', types: ['b'] },
      { type: 'b', reason: /^control \(bulk\) is not granted on job type "b"$/ },
    ],
    ['operate is not scoped by type', [{ action: 'operate' }], { action: 'operate', types: ['x'] }, { allowed: true }],
    [
      'operate does not give read',
      [{ action: 'operate' }],
      { action: 'read', types: ['x'] },
      { reason: /^no grant allows read$/ },
    ],
    [
      'admin covers control',
      [{ action: 'admin' }],
      { action: 'control', control: 'rerun', types: 'all' },
      { allowed: true },
    ],
    ['nothing', [], { action: 'read', types: [] }, { reason: /^no grant allows read$/ }],
  ];
  it.each(rows)('%s', (_name, grants, request, want) => {
    const decision = authorize(grants, request);
    if ('allowed' in want) {
      expect(decision).toEqual({ allowed: true });
      return;
    }
    expect(decision.allowed).toBe(false);
    if (decision.allowed) return;
    expect(decision.action).toBe(request.action);
    expect(decision.type).toBe(want.type);
    expect(decision.reason).toMatch(want.reason);
  });

  it('allows exactly the requests whose every type some covering grant names (or one grant leaves unscoped)', () => {
    const type = fc.constantFrom('a', 'b', 'c', 'd');
    const types = fc.option(fc.uniqueArray(type, { maxLength: 3 }), { nil: undefined });
    const control = fc.constantFrom<ControlAction>(...CONTROL_ACTIONS);
    const grant: fc.Arbitrary<Grant> = fc.oneof(
      fc.record({ action: fc.constantFrom('enqueue' as const, 'signal' as const, 'read' as const), types }),
      fc.record({
        action: fc.constant('control' as const),
        types,
        actions: fc.option(fc.uniqueArray(control, { maxLength: 2 }), { nil: undefined }),
      }),
      fc.constant<Grant>({ action: 'operate' }),
      fc.constant<Grant>({ action: 'admin' }),
    );
    const strip = (g: Grant): Grant =>
      Object.fromEntries(Object.entries(g).filter(([, v]) => v !== undefined)) as Grant;
    fc.assert(
      fc.property(
        fc.array(grant.map(strip), { maxLength: 4 }),
        fc.constantFrom('enqueue', 'signal', 'read', 'control' as const),
        control,
        fc.uniqueArray(type, { minLength: 1, maxLength: 4 }),
        (grants, action, sub, wanted) => {
          const request: AccessRequest = { action, ...(action === 'control' ? { control: sub } : {}), types: wanted };
          const covering = grants.filter(
            (g) =>
              g.action === 'admin' ||
              (g.action === action && (g.action !== 'control' || !g.actions || g.actions.includes(sub))),
          );
          const expected = wanted.every((t) =>
            covering.some((g) => g.action === 'admin' || !('types' in g) || !g.types || g.types.includes(t)),
          );
          const decision = authorize(grants, request);
          expect(decision.allowed).toBe(expected);
          if (!decision.allowed && covering.length > 0) {
            // the first type no covering grant names
            expect(decision.type).toBe(wanted.find((t) => !covering.some((g) => 'types' in g && g.types?.includes(t))));
          }
        },
      ),
    );
  });
});

describe('grantsOf', () => {
  const document: GrantsDocument = {
    v: 1,
    principals: { [BILLING]: [{ action: 'enqueue', types: ['charge'] }] },
    unlisted: [{ action: 'read' }],
  };

  it('gives a listed principal its own grants, not unlisted', () => {
    expect(grantsOf(document, principal(BILLING))).toEqual([{ action: 'enqueue', types: ['charge'] }]);
  });

  it('gives a principal with no entry the unlisted grants, and nothing by default', () => {
    expect(grantsOf(document, principal('arn:aws:iam::123456789012:role/other'))).toEqual([{ action: 'read' }]);
    expect(grantsOf({ v: 1, principals: {} }, principal(BILLING))).toEqual([]);
  });

  it('gives a caller with no IAM identity nothing, even when unlisted callers get admin', () => {
    expect(grantsOf(adminDocument(), undefined)).toEqual([]);
    expect(authorize(grantsOf(adminDocument(), undefined), { action: 'read', types: [] }).allowed).toBe(false);
  });
});

describe('typeScope', () => {
  it('is all for admin and operate, some for scoped grants, none without a covering grant', () => {
    expect(typeScope([{ action: 'admin' }], 'signal')).toEqual({ kind: 'all' });
    expect(typeScope([{ action: 'operate' }], 'operate')).toEqual({ kind: 'all' });
    expect(typeScope([{ action: 'signal', types: ['a'] }], 'signal')).toEqual({ kind: 'some', types: new Set(['a']) });
    expect(typeScope([{ action: 'signal', types: ['a'] }], 'read')).toEqual({ kind: 'none' });
    expect(typeScope([{ action: 'control', actions: ['cancel'] }], 'control', 'retry')).toEqual({ kind: 'none' });
  });
});
