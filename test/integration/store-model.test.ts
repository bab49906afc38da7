/**
 * Model-based test of the job ports: random sequences of enqueue (create), claim, heartbeat,
 * progress, succeed, fail, retry, cancel, restart, undo of a restart, expire, a lost-response
 * replay of the previous write, time advances and "supervise" are applied to the DynamoDB
 * adapters on DynamoDB Local and to the reference model (the in-memory fakes of
 * test/support/fakes.ts). After every step the two must agree on the outcome (result, or
 * error), on the whole stored job and on its due-index attributes; "supervise" also checks what
 * the supervisor relies on to find lost work (see `checkDue`).
 *
 * Size: ORRERY_MODEL_RUNS sequences (default 40) of at most ORRERY_MODEL_STEPS steps
 * (default 25). On failure fast-check prints the seed and path; replay with
 * ORRERY_MODEL_SEED=<seed> ORRERY_MODEL_PATH=<path>.
 */

import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { fromItem } from '../../shared/aws/job-item';
import { CANCELLABLE_STATES, RETRYABLE_STATES } from '../../shared/core/control';
import type { JobControl } from '../../shared/core/control-ports';
import { dueBucket } from '../../shared/core/due';
import { appendError, type Job } from '../../shared/core/job';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import type { JobStore } from '../../shared/core/ports';
import { EARLY_START_TOLERANCE_MS } from '../../shared/core/scheduling';
import { isSettled } from '../../shared/core/states';
import { JOB_TABLE, keys } from '../../shared/core/table';
import { LeaseLostError } from '../../shared/errors';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { createTableInput } from '../local-aws/deploy';
import { uniquePrefix } from '../local-aws/namespace';
import { FakeJobControl } from '../support/control-fakes';
import { type DueAttributes, FakeJobStore, newJob } from '../support/fakes';

const RUNS = Number(process.env.ORRERY_MODEL_RUNS ?? 40);
const MAX_STEPS = Number(process.env.ORRERY_MODEL_STEPS ?? 25);
const SEED = process.env.ORRERY_MODEL_SEED;
const PATH = process.env.ORRERY_MODEL_PATH;
/** Job ids per sequence: few, so steps keep meeting the same job. */
const SLOTS = 2;
const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const sec = (ms: number) => Math.floor(ms / 1000);

const prefix = uniquePrefix('model');
const tableName = `${prefix}-jobs`;
const dynamo = new DynamoDBClient({
  endpoint: inject('dynamodbEndpoint'),
  region: 'us-east-1',
  credentials: LOCAL_CREDENTIALS,
});

/** One implementation of the ports, and a way to read an item whole (job and due attributes). */
interface Leg {
  store: JobStore & Required<Pick<JobStore, 'expire'>>;
  control: JobControl;
  read(id: string): Promise<{ job: Job; due: DueAttributes } | undefined>;
}

const adapters: Leg = {
  store: new DynamoJobStore(dynamo, tableName),
  control: new DynamoJobControl(dynamo, tableName),
  async read(id) {
    const out = await dynamo.send(
      new GetItemCommand({ TableName: tableName, Key: keyOf(keys.job(id)), ConsistentRead: true }),
    );
    if (!out.Item) return undefined;
    const raw = unmarshall(out.Item) as { dueBucket?: unknown; dueAt?: unknown };
    const due: DueAttributes = {};
    if (typeof raw.dueBucket === 'string') due.dueBucket = raw.dueBucket;
    if (typeof raw.dueAt === 'number') due.dueAt = raw.dueAt;
    // the status item, with the error history from the job's error items (as get reads it)
    const job = await adapters.store.get(id);
    return { job: job ?? fromItem(out.Item), due };
  },
};

function modelLeg(): Leg & { store: FakeJobStore } {
  const store = new FakeJobStore();
  return {
    store,
    control: new FakeJobControl(store),
    async read(id) {
      const job = store.peek(id);
      return job ? { job, due: store.due(id) ?? {} } : undefined;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Steps, as generated (abstract: times are anchored to the model's state when the step runs)

type Anchor = 'clock' | 'lease' | 'runAt' | 'dispatchBy';

type Step =
  | {
      op: 'create';
      slot: number;
      state: 'queued' | 'scheduled';
      runAtIn: number;
      dispatchIn: number | null;
      maxAttempts: number;
    }
  | {
      op: 'claim';
      slot: number;
      worker: number;
      at: Anchor;
      delta: number;
      leaseMs: number;
      timeoutMs: number | null;
      message: boolean;
      otherType: boolean;
    }
  | { op: 'heartbeat'; handle: number; delta: number; leaseMs: number }
  | { op: 'progress'; handle: number; percent: number }
  | { op: 'succeed'; handle: number; result: number | null; retentionS: number; foreign: boolean }
  /** `hold`: the fail of a replay that diverged, which ends the job `held`. */
  | { op: 'fail'; handle: number; retentionS: number; foreign: boolean; hold: boolean }
  | { op: 'retry'; handle: number; delayMs: number; foreign: boolean }
  | { op: 'cancel'; slot: number; retentionS: number }
  | { op: 'restart'; slot: number }
  | { op: 'undoRestart' }
  | { op: 'expire'; slot: number; at: 'clock' | 'dispatchBy'; delta: number; retentionS: number }
  | { op: 'replay' }
  | { op: 'advance'; ms: number }
  | { op: 'supervise'; slot: number };

/** A job slot; `SLOTS` itself stands for the job of the latest claim, so steps keep meeting live attempts. */
const slot = fc.nat({ max: SLOTS });
const handle = fc.nat({ max: 7 });
const edge = fc.integer({ min: -1, max: 1 });
const retentionS = fc.integer({ min: 0, max: 90 });
/** An attempt-ending write now and then comes from a writer other than the handle's owner. */
const foreign = fc.integer({ min: 0, max: 4 }).map((n) => n === 0);

const createArb = (slots: fc.Arbitrary<number>) =>
  fc.record({
    op: fc.constant('create' as const),
    slot: slots,
    state: fc.constantFrom('queued' as const, 'scheduled' as const),
    runAtIn: fc.oneof(fc.constant(0), fc.integer({ min: -5_000, max: 5_000 }), fc.integer({ min: 0, max: 300_000 })),
    dispatchIn: fc.option(fc.integer({ min: 1, max: 10_000 })),
    maxAttempts: fc.integer({ min: 1, max: 3 }),
  });

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: createArb(slot) },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('claim' as const),
      slot,
      worker: fc.nat({ max: 2 }),
      at: fc.constantFrom<Anchor>('clock', 'clock', 'lease', 'runAt', 'dispatchBy'),
      delta: fc.oneof(edge, fc.integer({ min: -3_000, max: 3_000 })),
      leaseMs: fc.constantFrom(5_000, 10_000, 30_000),
      timeoutMs: fc.option(fc.constantFrom(1_000, 60_000, 900_000)),
      message: fc.boolean(),
      otherType: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('heartbeat' as const),
      handle,
      delta: fc.integer({ min: 0, max: 5_000 }),
      leaseMs: fc.constantFrom(5_000, 10_000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('progress' as const), handle, percent: fc.integer({ min: 0, max: 100 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('succeed' as const),
      handle,
      result: fc.option(fc.integer({ min: 0, max: 9 })),
      retentionS,
      foreign,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('fail' as const), handle, retentionS, foreign, hold: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('retry' as const),
      handle,
      delayMs: fc.oneof(
        fc.integer({ min: 0, max: 2 * EARLY_START_TOLERANCE_MS }),
        fc.integer({ min: 0, max: 120_000 }),
      ),
      foreign,
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('cancel' as const), slot, retentionS }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('restart' as const), slot }) },
  { weight: 1, arbitrary: fc.constant({ op: 'undoRestart' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('expire' as const),
      slot,
      at: fc.constantFrom('clock' as const, 'dispatchBy' as const),
      delta: edge,
      retentionS,
    }),
  },
  { weight: 2, arbitrary: fc.constant({ op: 'replay' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.oneof(
        fc.integer({ min: 1, max: 3_000 }),
        fc.constantFrom(MAX_CLOCK_SKEW_MS, 5_000, 10_000, 30_000),
        fc.integer({ min: 30_000, max: 120_000 }),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('supervise' as const), slot }) },
);

/** A sequence: first every slot's job is enqueued, then random steps (at most MAX_STEPS in all). */
const sequenceArb: fc.Arbitrary<Step[]> = fc
  .tuple(
    fc.tuple(...Array.from({ length: SLOTS }, (_, i) => createArb(fc.constant(i)))),
    fc.array(stepArb, { minLength: 1, maxLength: Math.max(1, MAX_STEPS - SLOTS), size: 'max' }),
  )
  .map(([creates, steps]) => [...creates, ...steps]);

// ---------------------------------------------------------------------------------------------
// Running a sequence

/** What a write returned, comparable across legs. */
type Outcome = { ok: unknown } | { error: string };

/** One write with concrete inputs, runnable on either leg (and again, for a replay). */
interface Op {
  kind: Step['op'];
  label: string;
  ids: string[];
  exec(leg: Leg): Promise<unknown>;
  /** For a claim: what the harness needs to know of it. */
  claim?: { owner: string; leaseMs: number; timeoutMs: number | undefined };
}

async function outcome(op: Op, leg: Leg): Promise<Outcome> {
  try {
    const ok = await op.exec(leg);
    return { ok: ok === undefined ? null : ok };
  } catch (error) {
    if (error instanceof LeaseLostError) return { error: 'LeaseLostError' };
    return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}

/**
 * A job as a claim returned it (claimed, exhausted, or busy: a duplicate delivery that writes
 * anyway), with the claim's owner: the writes after a claim act through handles.
 */
interface Handle {
  job: Job;
  owner: string;
}

/** The handle's owner, or a writer of its own for a `foreign` write. */
function writerOf(h: Handle, foreign: boolean, index: number): string {
  return foreign ? `x.${index}` : h.owner;
}

let sequence = 0;
/** With ORRERY_MODEL_STATS set: how often each write ended how, printed at the end. */
const STATS = process.env.ORRERY_MODEL_STATS ? new Map<string, number>() : undefined;

function tally(op: Op, result: Outcome, before: Job | undefined): void {
  if (!STATS) return;
  const value = 'ok' in result ? (result.ok as { kind?: unknown; created?: unknown } | null) : undefined;
  const end =
    'error' in result
      ? result.error
      : typeof value?.kind === 'string'
        ? value.kind
        : typeof value?.created === 'boolean'
          ? `created ${value.created}`
          : JSON.stringify(value);
  const key = `${op.label.startsWith('replay') ? 'replay ' : ''}${op.kind} (${before?.state ?? 'none'}) → ${end}`;
  STATS.set(key, (STATS.get(key) ?? 0) + 1);
}

async function runSequence(steps: Step[]): Promise<void> {
  sequence += 1;
  const ids = Array.from({ length: SLOTS }, (_, i) => `m-${prefix}-${sequence}-${i}`);
  const model = modelLeg();
  const trace: string[] = [];
  const handles: Handle[] = [];
  let restartToUndo: { previous: Job; retries: number } | undefined;
  let lastWrite: Op | undefined;
  let clock = T0;

  const idOf = (n: number) => (n >= SLOTS ? (handles.at(-1)?.job.id ?? ids[0]) : ids[n]) as string;
  const current = (id: string) => model.store.peek(id);
  const pick = (n: number) => (handles.length === 0 ? undefined : handles[n % handles.length]);

  /** Fails with both sides in full and the steps run so far. */
  const same = (what: string, got: unknown, want: unknown): void => {
    try {
      expect(got).toEqual(want);
    } catch {
      throw new Error(
        `${what} differ\n--- adapter: ${JSON.stringify(got)}\n--- model:   ${JSON.stringify(want)}\n` +
          `--- steps run:\n${trace.join('\n')}`,
      );
    }
  };

  async function compare(id: string, context: string): Promise<void> {
    const [want, got] = await Promise.all([model.read(id), adapters.read(id)]);
    same(`${context}: the stored items of ${id}`, got, want);
  }

  /**
   * What the supervisor relies on to find a job that is not finished: either no due entry, and
   * then the job was never restarted (the creation sweep finds it, through the `byType` entry
   * its create wrote), or a due entry it can find (its bucket is the minute of its `dueAt`). A
   * restart always writes one: the creation sweep has passed by then.
   */
  function checkDue(id: string, item: { job: Job; due: DueAttributes } | undefined, leg: string): void {
    if (!item) return;
    const { job, due } = item;
    // held: nothing but an operator moves it (the supervisor clears its entry), as a finished job
    if (isSettled(job.state)) return;
    const problem =
      due.dueAt === undefined
        ? (job.retries ?? 0) > 0
          ? 'a restarted job without a due entry (the creation sweep has passed)'
          : undefined
        : due.dueBucket !== dueBucket(due.dueAt, id)
          ? 'a due entry in another bucket than its dueAt'
          : undefined;
    if (problem !== undefined) {
      throw new Error(
        `supervise (${leg}): ${id} (${job.state}) has due attributes ${JSON.stringify(due)}: ${problem}\n` +
          `--- steps run:\n${trace.join('\n')}`,
      );
    }
  }

  /** Turns an abstract step into a concrete write, or undefined when it has nothing to act on. */
  function resolve(step: Step, index: number): Op | undefined {
    switch (step.op) {
      case 'create': {
        const id = idOf(step.slot);
        const runAt = clock + step.runAtIn;
        const job = newJob(
          {
            id,
            type: 'echo',
            state: step.state,
            payload: { step: index },
            payloadHash: `h-${index}`,
            runAt: iso(runAt),
            maxAttempts: step.maxAttempts,
            ...(step.dispatchIn !== null ? { dispatchBy: iso(Math.max(runAt, clock) + step.dispatchIn) } : {}),
          },
          clock,
        );
        return {
          kind: step.op,
          label: `create ${JSON.stringify(job)}`,
          ids: [id],
          exec: (leg) => leg.store.create(job),
        };
      }
      case 'claim': {
        const id = idOf(step.slot);
        const job = current(id);
        let base = clock;
        if (step.at === 'lease' && job?.leaseExpiresAt !== undefined) base = job.leaseExpiresAt + MAX_CLOCK_SKEW_MS;
        if (step.at === 'runAt' && job) base = Date.parse(job.runAt) - EARLY_START_TOLERANCE_MS;
        if (step.at === 'dispatchBy' && job?.dispatchBy !== undefined) base = Date.parse(job.dispatchBy);
        const input = {
          id,
          type: step.otherType ? 'other' : 'echo',
          owner: `w${step.worker}.${index}`,
          now: base + step.delta,
          leaseMs: step.leaseMs,
          ...(step.timeoutMs !== null ? { attemptTimeoutMs: step.timeoutMs } : {}),
          ...(step.message ? { messageId: `msg-${index}` } : {}),
        };
        return {
          kind: step.op,
          label: `claim ${JSON.stringify(input)}`,
          ids: [id],
          exec: (leg) => leg.store.claim(input),
          claim: { owner: input.owner, leaseMs: input.leaseMs, timeoutMs: input.attemptTimeoutMs },
        };
      }
      case 'heartbeat': {
        const h = pick(step.handle);
        if (!h) return undefined;
        const input = { job: h.job, now: clock + step.delta, leaseMs: step.leaseMs };
        return {
          kind: step.op,
          label: `heartbeat by ${h.owner} token ${h.job.leaseToken} now ${input.now} lease ${input.leaseMs}`,
          ids: [h.job.id],
          exec: (leg) => leg.store.heartbeat(input),
        };
      }
      case 'progress': {
        const h = pick(step.handle);
        if (!h) return undefined;
        const input = { job: h.job, progress: { percent: step.percent, at: iso(clock) } };
        return {
          kind: step.op,
          label: `progress by ${h.owner} token ${h.job.leaseToken} ${step.percent}%`,
          ids: [h.job.id],
          exec: (leg) => leg.store.progress(input),
        };
      }
      case 'succeed': {
        const h = pick(step.handle);
        if (!h) return undefined;
        const input = {
          job: h.job,
          now: clock,
          result: step.result === null ? undefined : { r: step.result },
          expiresAt: sec(clock) + step.retentionS,
          writer: writerOf(h, step.foreign, index),
        };
        return {
          kind: step.op,
          label: `succeed by ${input.writer} token ${h.job.leaseToken} now ${clock} result ${step.result} ttl ${input.expiresAt}`,
          ids: [h.job.id],
          exec: (leg) => leg.store.succeed(input),
        };
      }
      case 'fail': {
        const h = pick(step.handle);
        if (!h) return undefined;
        const reason = step.hold ? 'nondeterministic' : 'error';
        const entry = { attempt: h.job.attempts, at: iso(clock), reason, name: 'Error', message: `s${index}` };
        const input = {
          job: h.job,
          now: clock,
          errors: appendError(h.job.errors, entry),
          expiresAt: sec(clock) + step.retentionS,
          writer: writerOf(h, step.foreign, index),
          ...(step.hold ? { hold: true } : {}),
        };
        return {
          kind: step.op,
          label: `${step.hold ? 'hold' : 'fail'} by ${input.writer} token ${h.job.leaseToken} now ${clock} ttl ${input.expiresAt}`,
          ids: [h.job.id],
          exec: (leg) => leg.store.fail(input),
        };
      }
      case 'retry': {
        const h = pick(step.handle);
        if (!h) return undefined;
        const entry = { attempt: h.job.attempts, at: iso(clock), reason: 'error', name: 'Error', message: `s${index}` };
        // as the worker does: the next attempt after a backoff from now
        const input = {
          job: h.job,
          now: clock,
          runAt: clock + step.delayMs,
          errors: appendError(h.job.errors, entry),
          expiresAt: 2e9,
          writer: writerOf(h, step.foreign, index),
        };
        return {
          kind: step.op,
          label: `retry by ${input.writer} token ${h.job.leaseToken} now ${clock} runAt ${input.runAt}`,
          ids: [h.job.id],
          exec: (leg) => leg.store.retry(input),
        };
      }
      case 'cancel': {
        const id = idOf(step.slot);
        const input = {
          id,
          type: 'echo',
          from: CANCELLABLE_STATES,
          now: clock,
          expiresAt: sec(clock) + step.retentionS,
        };
        return {
          kind: step.op,
          label: `cancel ${JSON.stringify(input)}`,
          ids: [id],
          exec: (leg) => leg.control.cancel(input),
        };
      }
      case 'restart': {
        const id = idOf(step.slot);
        const input = { id, type: 'echo', from: RETRYABLE_STATES, now: clock };
        return {
          kind: step.op,
          label: `restart ${JSON.stringify(input)}`,
          ids: [id],
          exec: (leg) => leg.control.restart(input),
        };
      }
      case 'undoRestart': {
        const undo = restartToUndo;
        if (!undo) return undefined;
        return {
          kind: step.op,
          label: `undoRestart of ${undo.previous.id} retries ${undo.retries}`,
          ids: [undo.previous.id],
          exec: (leg) => leg.control.undoRestart(undo),
        };
      }
      case 'expire': {
        const id = idOf(step.slot);
        const job = current(id) ?? newJob({ id, type: 'echo' }, clock);
        const base = step.at === 'dispatchBy' && job.dispatchBy !== undefined ? Date.parse(job.dispatchBy) : clock;
        const input = { job, now: base + step.delta, expiresAt: sec(clock) + step.retentionS };
        return {
          kind: step.op,
          label: `expire ${id} now ${input.now} ttl ${input.expiresAt}`,
          ids: [id],
          exec: (leg) => leg.store.expire(input),
        };
      }
      case 'replay':
        return lastWrite && { ...lastWrite, label: `replay: ${lastWrite.label}` };
      case 'advance':
      case 'supervise':
        return undefined;
    }
  }

  /** What the harness learns from a write's outcome (the model's; the adapter's is equal). */
  function learn(op: Op, result: Outcome, before: Job | undefined): void {
    if (!('ok' in result)) return;
    const value = result.ok as { kind?: string; job?: Job } | null;
    if (op.claim && value?.job && (value.kind === 'claimed' || value.kind === 'exhausted' || value.kind === 'busy')) {
      handles.push({ job: value.job, owner: op.claim.owner });
    }
    if (op.kind === 'restart' && value?.kind === 'applied' && value.job && before) {
      restartToUndo = { previous: before, retries: value.job.retries ?? 0 };
    }
  }

  for (const [index, step] of steps.entries()) {
    if (step.op === 'advance') {
      clock += step.ms;
      trace.push(`${index}: advance ${step.ms} ms → ${clock - T0} ms after T0`);
      continue;
    }
    if (step.op === 'supervise') {
      const id = idOf(step.slot);
      trace.push(`${index}: supervise ${id}`);
      checkDue(id, await model.read(id), 'model');
      checkDue(id, await adapters.read(id), 'adapter');
      continue;
    }
    const op = resolve(step, index);
    if (!op) {
      trace.push(`${index}: ${step.op} (nothing to act on)`);
      continue;
    }
    const before = op.ids[0] === undefined ? undefined : current(op.ids[0]);
    const want = await outcome(op, model);
    const got = await outcome(op, adapters);
    trace.push(`${index}: ${op.label} → ${JSON.stringify(want)}`);
    same(`step ${index}: the outcomes`, got, want);
    for (const id of op.ids) await compare(id, `after step ${index}`);
    learn(op, want, before);
    tally(op, want, before);
    if (step.op !== 'replay') lastWrite = op;
  }
  for (const id of ids) await compare(id, 'at the end');
}

beforeAll(async () => {
  await dynamo.send(new CreateTableCommand(createTableInput(tableName, JOB_TABLE)));
});

afterAll(async () => {
  if (STATS) {
    const lines = [...STATS.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${String(v).padStart(5)}  ${k}`);
    console.log(`model test: writes by outcome\n${lines.join('\n')}`);
  }
  await dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  dynamo.destroy();
});

describe('job ports: DynamoDB adapters against the reference model', () => {
  it(
    `agree after every step (${RUNS} runs of at most ${MAX_STEPS} steps)`,
    async () => {
      await fc.assert(fc.asyncProperty(sequenceArb, runSequence), {
        numRuns: RUNS,
        ...(SEED !== undefined ? { seed: Number(SEED) } : {}),
        ...(PATH !== undefined ? { path: PATH } : {}),
      });
    },
    Math.max(120_000, RUNS * MAX_STEPS * 200),
  );
});
