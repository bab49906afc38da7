/**
 * The claim rule, stated once: when a worker may start an attempt of a job. It is data (a tree of
 * clauses over the stored job's attributes and the claim's parameters) so that it can be read
 * twice without being written twice: {@link claimVerdict} evaluates it here, for the in-memory
 * store and the worker's early check, and the DynamoDB adapter compiles the same clauses into
 * its claim's condition expression (`shared/aws/job-store/condition.ts`). Pure domain code.
 *
 * The clauses follow DynamoDB's rules for a condition: a comparison with a missing attribute is
 * false (so a `running` job without a lease expiry is never taken over), and `exists`/`absent`
 * test whether the attribute is stored at all.
 */
import type { Job } from './job';
import { classifyRefusedClaim, MAX_CLOCK_SKEW_MS } from './lease';
import type { RefusedClaim } from './ports';
import { EARLY_START_TOLERANCE_MS } from './scheduling';
import { CLAIMABLE_STATES, type JobState } from './states';

/** How an attribute or parameter compares: as text, as a number, or as an instant (ISO text when stored). */
export type RuleValueKind = 'text' | 'number' | 'time';

/** The stored attributes the rule reads, with how each compares (`pk` is there for every job). */
export const CLAIM_ATTRIBUTES = {
  pk: 'text',
  type: 'text',
  state: 'text',
  attempts: 'number',
  maxAttempts: 'number',
  runAt: 'time',
  pendingParents: 'number',
  leaseExpiresAt: 'number',
  dispatchBy: 'time',
  resumes: 'number',
} as const satisfies Record<string, RuleValueKind>;

export type ClaimAttribute = keyof typeof CLAIM_ATTRIBUTES;

/** The values a claim brings, each from its `type` and its clock's `now` (epoch ms). */
export const CLAIM_PARAMETERS = {
  /** The type the delivery names. */
  type: { kind: 'text', of: (input) => input.type },
  /** The latest `runAt` that is due: an early start within the tolerance is allowed. */
  earliest: { kind: 'time', of: (input) => input.now + EARLY_START_TOLERANCE_MS },
  /** An earlier lease is no longer held once it expired before this (the clock-skew bound). */
  fence: { kind: 'number', of: (input) => input.now - MAX_CLOCK_SKEW_MS },
  now: { kind: 'time', of: (input) => input.now },
  zero: { kind: 'number', of: () => 0 },
} as const satisfies Record<
  string,
  { kind: RuleValueKind; of: (input: { type: string; now: number }) => string | number }
>;

export type ClaimParameter = keyof typeof CLAIM_PARAMETERS;

/** A comparison operator, as DynamoDB writes it. */
export type Comparator = '=' | '<' | '<=' | '>' | '>=';

/** One clause of a rule. `state` values are job states, compared as text. */
export type Clause =
  | { kind: 'exists'; attribute: ClaimAttribute }
  | { kind: 'absent'; attribute: ClaimAttribute }
  | {
      kind: 'compare';
      attribute: ClaimAttribute;
      op: Comparator;
      to: { parameter: ClaimParameter } | { attribute: ClaimAttribute };
    }
  | { kind: 'state-in'; states: readonly JobState[] }
  | { kind: 'all'; clauses: readonly Clause[] }
  | { kind: 'any'; clauses: readonly Clause[] };

const compare = (attribute: ClaimAttribute, op: Comparator, parameter: ClaimParameter): Clause => ({
  kind: 'compare',
  attribute,
  op,
  to: { parameter },
});

/** A `running` job whose lease expired longer than the clock-skew bound ago: a takeover. */
export const TAKEOVER: Clause = {
  kind: 'all',
  clauses: [{ kind: 'state-in', states: ['running'] }, compare('leaseExpiresAt', '<', 'fence')],
};

/**
 * A job waiting to start that is due, with no earlier attempt's lease possibly still held and
 * no parent left to wait for.
 */
export const DUE_START: Clause = {
  kind: 'all',
  clauses: [
    { kind: 'state-in', states: CLAIMABLE_STATES },
    compare('runAt', '<=', 'earliest'),
    { kind: 'absent', attribute: 'pendingParents' },
    {
      kind: 'any',
      clauses: [{ kind: 'absent', attribute: 'leaseExpiresAt' }, compare('leaseExpiresAt', '<', 'fence')],
    },
  ],
};

/** The claim rule: every clause must hold for a claim to start an attempt. */
export const CLAIM_RULE: Clause = {
  kind: 'all',
  clauses: [
    { kind: 'exists', attribute: 'pk' },
    compare('type', '=', 'type'),
    { kind: 'compare', attribute: 'attempts', op: '<', to: { attribute: 'maxAttempts' } },
    { kind: 'any', clauses: [DUE_START, TAKEOVER] },
    // not a never-started job past its dispatchBy (one that waited, `resumes`, had started)
    {
      kind: 'any',
      clauses: [
        { kind: 'absent', attribute: 'dispatchBy' },
        compare('attempts', '>', 'zero'),
        { kind: 'exists', attribute: 'resumes' },
        compare('dispatchBy', '>=', 'now'),
      ],
    },
  ],
};

/** A value as a clause compares it: text as is, numbers and instants (epoch ms) as numbers. */
type Comparable = string | number;

function attributeOf(job: Job, attribute: ClaimAttribute): Comparable | undefined {
  const value = attribute === 'pk' ? job.id : job[attribute];
  if (value === undefined) return undefined;
  return CLAIM_ATTRIBUTES[attribute] === 'time' ? Date.parse(String(value)) : value;
}

function holds(a: Comparable, op: Comparator, b: Comparable): boolean {
  switch (op) {
    case '=':
      return a === b;
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
}

/** True when `clause` holds for the stored `job` and a claim of `type` at `now`, as DynamoDB would judge it. */
export function evaluate(clause: Clause, job: Job, input: { type: string; now: number }): boolean {
  switch (clause.kind) {
    case 'exists':
      return attributeOf(job, clause.attribute) !== undefined;
    case 'absent':
      return attributeOf(job, clause.attribute) === undefined;
    case 'state-in':
      return clause.states.includes(job.state);
    case 'all':
      return clause.clauses.every((c) => evaluate(c, job, input));
    case 'any':
      return clause.clauses.some((c) => evaluate(c, job, input));
    case 'compare': {
      const left = attributeOf(job, clause.attribute);
      const right =
        'parameter' in clause.to
          ? CLAIM_PARAMETERS[clause.to.parameter].of(input)
          : attributeOf(job, clause.to.attribute);
      // a comparison with a missing attribute is false
      return left !== undefined && right !== undefined && holds(left, clause.op, right);
    }
  }
}

/** What a claim of a job would do: start an attempt (`takeover` of an expired lease or not), or why not. */
export type ClaimVerdict = { kind: 'claim'; takeover: boolean } | RefusedClaim;

/**
 * The claim rule applied to the stored `job` (undefined: there is none) for a delivery of `type`
 * at `now`: `claim` when {@link CLAIM_RULE} holds (a `takeover` when the job is `running` with an
 * expired lease past the skew fence), otherwise the refusal {@link classifyRefusedClaim} gives.
 * A replay of our own applied claim is the store's to recognise (it knows the owner).
 */
export function claimVerdict(job: Job | undefined, type: string, now: number): ClaimVerdict {
  if (job === undefined) return { kind: 'missing' };
  if (!evaluate(CLAIM_RULE, job, { type, now })) return classifyRefusedClaim(job, now, type);
  return { kind: 'claim', takeover: job.state === 'running' };
}
