/**
 * The contract of the job ports (`JobStore` and `JobControl`), as one vitest suite that runs
 * against every implementation: the in-memory fakes (test/unit/contract-fakes.test.ts) and the
 * DynamoDB adapters on DynamoDB Local (test/integration/contract-adapters.test.ts). Unit tests
 * trust the fakes to behave as the adapters do; this suite is what holds them to it.
 *
 * Every case checks the whole stored job and its due-index attributes (`dueBucket`, `dueAt`,
 * which the supervisor reads back) after the write, not just the field the write is about.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimVerdict } from '../../shared/core/claim-rule';
import type { JobControl } from '../../shared/core/control-ports';
import { createDueAttributes, jobDueAttributes } from '../../shared/core/due';
import { type AttemptError, ERROR_HISTORY_LIMIT, type Job } from '../../shared/core/job';
import { classifyRefusedClaim, MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import type { ClaimResult, JobStore } from '../../shared/core/ports';
import { EARLY_START_TOLERANCE_MS } from '../../shared/core/scheduling';
import { type JobState, TERMINAL_STATES } from '../../shared/core/states';
import { LeaseLostError } from '../../shared/errors';
import { claimShapeArbitrary, claimShapes } from '../support/claim-shapes';
import { type DueAttributes, newJob } from '../support/fakes';

/** One implementation of the ports under test, on a store that outlives one case. */
export interface ContractLeg {
  store: JobStore & Required<Pick<JobStore, 'expire' | 'markWaiting' | 'skip'>>;
  control: JobControl;
  /** The item's due attributes (`{}` when it has none), or undefined when there is no item. */
  dueOf(id: string): Promise<DueAttributes | undefined>;
}

export const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const LEASE = 10_000;
const SKEW = MAX_CLOCK_SKEW_MS;
const iso = (ms: number) => new Date(ms).toISOString();
const NO_COST_INPUT = { requests: 0, writeUnits: 0 };
const sec = (ms: number) => Math.floor(ms / 1000);

/** A job as the store gives it back: JSON-shaped, `lastError` derived from the history. */
export function asStored(job: Job): Job {
  const copy = JSON.parse(JSON.stringify(job)) as Job;
  delete copy.lastError;
  const last = copy.errors.at(-1);
  if (last) copy.lastError = last;
  return copy;
}

function attemptError(attempt: number, at: number, message = 'boom'): AttemptError {
  return { attempt, at: iso(at), reason: 'error', name: 'Error', message };
}

/**
 * Registers the contract's cases. `setup` is called once per case; ids are unique per
 * registration, so every leg may share one table across cases.
 */
export function jobStoreContract(setup: () => Promise<ContractLeg>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;

  function job(overrides: Partial<Job> = {}, createdAt = T0): Job {
    seq += 1;
    return newJob({ id: `c-${run}-${seq}`, type: 'echo', payload: { n: seq }, ...overrides }, createdAt);
  }

  async function given(leg: ContractLeg, overrides: Partial<Job> = {}): Promise<Job> {
    const j = job(overrides);
    expect(await leg.store.create(j)).toEqual({ created: true });
    return asStored(j);
  }

  async function expectStored(leg: ContractLeg, expected: Job, due: DueAttributes): Promise<void> {
    expect(await leg.store.get(expected.id)).toEqual(asStored(expected));
    expect(await leg.dueOf(expected.id)).toEqual(due);
  }

  /** The stored job and its due attributes, to check a refused write left both alone. */
  async function snapshot(leg: ContractLeg, id: string) {
    return { job: await leg.store.get(id), due: await leg.dueOf(id) };
  }

  function claimOf(j: Job, owner: string, now: number, extra: { attemptTimeoutMs?: number; messageId?: string } = {}) {
    return { id: j.id, type: j.type, owner, now, leaseMs: LEASE, ...extra };
  }

  async function claimed(leg: ContractLeg, j: Job, owner: string, now: number): Promise<Job> {
    const result = await leg.store.claim(claimOf(j, owner, now));
    if (result.kind !== 'claimed') throw new Error(`expected a claim, got ${result.kind}`);
    return result.job;
  }

  /** What a successful claim stores. */
  function afterClaim(j: Job, owner: string, now: number, messageId = '-'): Job {
    return {
      ...j,
      state: 'running',
      attempts: j.attempts + 1,
      leaseToken: j.leaseToken + 1,
      leaseOwner: owner,
      leaseExpiresAt: now + LEASE,
      leaseMessage: messageId,
      startedAt: iso(now),
      updatedAt: iso(now),
    };
  }

  describe('create and get', () => {
    it('creates a job whose id is free and reads it back as written, with a due entry only when it is far off', async () => {
      const leg = await setup();
      const jobs = [
        job(),
        job({ state: 'scheduled', runAt: iso(T0 + 3_600_000), dispatchBy: iso(T0 + 7_200_000) }),
        job({ state: 'retrying', attempts: 1, leaseToken: 1, errors: [attemptError(1, T0)] }),
        job({ state: 'running', attempts: 1, leaseToken: 1, leaseOwner: 'w', leaseExpiresAt: T0 + LEASE }),
        job({ state: 'succeeded', attempts: 1, leaseToken: 1, result: { ok: true }, expiresAt: sec(T0) + 60 }),
      ];
      for (const j of jobs) {
        expect(await leg.store.create(j)).toEqual({ created: true });
        await expectStored(leg, j, createDueAttributes(j));
      }
      // the creation sweep looks at the immediate ones; the far-future one has its entry
      expect(await leg.dueOf(jobs[0]?.id ?? '')).toEqual({});
      expect((await leg.dueOf(jobs[1]?.id ?? ''))?.dueAt).toBe(T0 + 3_600_000 + 60_000);
      expect(await leg.dueOf(jobs[4]?.id ?? '')).toEqual({});
    });

    it('returns the stored job and writes nothing when the id is taken', async () => {
      const leg = await setup();
      const first = await given(leg, { state: 'scheduled', runAt: iso(T0 + 60_000) });
      const before = await snapshot(leg, first.id);
      const again = await leg.store.create({ ...first, payload: { other: true }, state: 'queued' });
      expect(again).toEqual({ created: false, existing: first });
      expect(await snapshot(leg, first.id)).toEqual(before);
    });

    it('keeps a finished job until its retention has passed (expiresAt before the new createdAt)', async () => {
      const leg = await setup();
      const done = await given(leg, { state: 'succeeded', expiresAt: sec(T0) + 10 });
      // expiresAt equal to the new job's createdAt (in seconds): still retained
      const same = { ...job({}, T0 + 10_000), id: done.id };
      expect(await leg.store.create(same)).toEqual({ created: false, existing: done });
      // a job without expiresAt is never free
      const live = await given(leg, { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 });
      const late = { ...job({}, T0 + 365 * 86_400_000), id: live.id };
      expect(await leg.store.create(late)).toEqual({ created: false, existing: live });
    });

    it('replaces a job past its retention with the new one, leaving nothing of the old item', async () => {
      const leg = await setup();
      const old = await given(leg, {
        state: 'failed',
        attempts: 3,
        leaseToken: 3,
        leaseExpiresAt: T0,
        lastWriter: 'w-old',
        retries: 2,
        result: 'old',
        errors: [attemptError(3, T0)],
        progress: { percent: 50, at: iso(T0) },
        finishedAt: iso(T0),
        expiresAt: sec(T0) + 10,
      });
      const fresh = { ...job({ payload: { fresh: true } }, T0 + 10_001), id: old.id };
      expect(await leg.store.create(fresh)).toEqual({ created: true });
      await expectStored(leg, fresh, createDueAttributes(fresh));
    });

    it('gives a large payload back whole from create (taken id), claim and get', async () => {
      const leg = await setup();
      const payload = { blob: 'p'.repeat(10 * 1024), n: 1 };
      const j = await given(leg, { payload });
      expect(await leg.store.create(job({ id: j.id, payload }))).toMatchObject({
        created: false,
        existing: { payload },
      });
      expect((await claimed(leg, j, 'a', T0)).payload).toEqual(payload);
      expect((await leg.store.get(j.id))?.payload).toEqual(payload);
    });

    it('reads a missing job as undefined', async () => {
      const leg = await setup();
      expect(await leg.store.get(`c-${run}-nothing`)).toBeUndefined();
      expect(await leg.dueOf(`c-${run}-nothing`)).toBeUndefined();
    });
  });

  describe('claim', () => {
    it('starts an attempt: running, attempts + 1, token + 1, lease, message; no due entry written', async () => {
      const leg = await setup();
      const j = await given(leg, { attempts: 1, leaseToken: 4, state: 'retrying', errors: [attemptError(1, T0)] });
      const result = await leg.store.claim(claimOf(j, 'w1', T0, { attemptTimeoutMs: 900_000, messageId: 'm-1' }));
      const want = afterClaim(j, 'w1', T0, 'm-1');
      expect(result).toEqual({ kind: 'claimed', job: asStored(want) });
      await expectStored(leg, want, {});
    });

    it('without a message id records "-"', async () => {
      const leg = await setup();
      const j = await given(leg);
      const result = await leg.store.claim(claimOf(j, 'w1', T0 + 5));
      const want = afterClaim(j, 'w1', T0 + 5);
      expect(result).toEqual({ kind: 'claimed', job: asStored(want) });
      await expectStored(leg, want, {});
    });

    for (const state of ['scheduled', 'queued', 'retrying'] as const) {
      it(`refuses a ${state} job until its runAt is within the early-start tolerance (early)`, async () => {
        const leg = await setup();
        const runAt = T0 + 120_000;
        const j = await given(leg, {
          state,
          runAt: iso(runAt),
          ...(state === 'retrying' ? { attempts: 1, leaseToken: 1 } : {}),
        });
        const before = await snapshot(leg, j.id);
        const early = await leg.store.claim(claimOf(j, 'w1', runAt - EARLY_START_TOLERANCE_MS - 1));
        expect(early).toEqual({ kind: 'early', job: j });
        expect(await snapshot(leg, j.id)).toEqual(before);
        const now = runAt - EARLY_START_TOLERANCE_MS;
        expect(await leg.store.claim(claimOf(j, 'w2', now))).toEqual({
          kind: 'claimed',
          job: asStored(afterClaim(j, 'w2', now)),
        });
      });
    }

    it('refuses a running job while its lease may be held, up to MAX_CLOCK_SKEW_MS after expiry (busy), then takes it over', async () => {
      const leg = await setup();
      const j = await given(leg);
      const first = await claimed(leg, j, 'a', T0);
      const due = await leg.dueOf(j.id);
      const expiry = T0 + LEASE;
      for (const now of [T0 + 1, expiry, expiry + SKEW]) {
        expect(await leg.store.claim(claimOf(j, 'b', now))).toEqual({ kind: 'busy', job: first });
      }
      await expectStored(leg, first, due ?? {});
      const now = expiry + SKEW + 1;
      const result = await leg.store.claim(claimOf(j, 'b', now));
      const want = afterClaim(first, 'b', now);
      expect(result).toEqual({ kind: 'claimed', job: asStored(want) });
      expect(want).toMatchObject({ attempts: 2, leaseToken: 2 });
      await expectStored(leg, want, due ?? {});
    });

    it('reports the last attempt whose lease expired as exhausted, and leaves it running', async () => {
      const leg = await setup();
      const j = await given(leg, { maxAttempts: 1 });
      const first = await claimed(leg, j, 'a', T0);
      const before = await snapshot(leg, j.id);
      expect(await leg.store.claim(claimOf(j, 'b', T0 + LEASE + SKEW + 1))).toEqual({ kind: 'exhausted', job: first });
      expect(await snapshot(leg, j.id)).toEqual(before);
    });

    it('refuses a waiting job that has used all its attempts, as classifyRefusedClaim says', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'retrying', attempts: 3, maxAttempts: 3, leaseToken: 3 });
      const result = await leg.store.claim(claimOf(j, 'w', T0));
      expect(result.kind).not.toBe('claimed');
      expect(result).toEqual(classifyRefusedClaim(j, T0, j.type));
      await expectStored(leg, j, createDueAttributes(j));
    });

    for (const state of TERMINAL_STATES) {
      it(`reports a ${state} job as finished`, async () => {
        const leg = await setup();
        const j = await given(leg, { state, attempts: 1, leaseToken: 1, expiresAt: sec(T0) + 3600 });
        expect(await leg.store.claim(claimOf(j, 'w', T0 + 10 * LEASE))).toEqual({ kind: 'finished', job: j });
        await expectStored(leg, j, {});
      });
    }

    it('reports a missing job, and a job of another type, as missing', async () => {
      const leg = await setup();
      const j = await given(leg);
      expect(await leg.store.claim({ ...claimOf(j, 'w', T0), type: 'sleep' })).toEqual({ kind: 'missing' });
      expect(await leg.store.claim({ ...claimOf(j, 'w', T0), id: `c-${run}-none` })).toEqual({ kind: 'missing' });
      await expectStored(leg, j, createDueAttributes(j));
    });

    it('refuses a never-started job past its dispatchBy (past-deadline), claims it at the deadline', async () => {
      const leg = await setup();
      const deadline = T0 + 5000;
      for (const state of ['queued', 'scheduled'] as const) {
        const late = await given(leg, { state, dispatchBy: iso(deadline) });
        expect(await leg.store.claim(claimOf(late, 'w', deadline + 1))).toEqual({ kind: 'past-deadline', job: late });
        await expectStored(leg, late, createDueAttributes(late));
      }
      const onTime = await given(leg, { dispatchBy: iso(deadline) });
      expect((await leg.store.claim(claimOf(onTime, 'w', deadline))).kind).toBe('claimed');
    });

    it('ignores dispatchBy once the job has started (a retry runs after the deadline)', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'retrying', attempts: 1, leaseToken: 1, dispatchBy: iso(T0) });
      const now = T0 + 60_000;
      expect(await leg.store.claim(claimOf(j, 'w', now))).toEqual({
        kind: 'claimed',
        job: asStored(afterClaim(j, 'w', now)),
      });
    });

    it('refuses a waiting job whose earlier lease may still be held (fenced), then starts it', async () => {
      const leg = await setup();
      const expiry = T0 + LEASE;
      // as cancel and restart leave a job whose attempt was running
      const j = await given(leg, { leaseToken: 1, leaseExpiresAt: expiry, retries: 1 });
      for (const now of [T0, expiry, expiry + SKEW]) {
        expect(await leg.store.claim(claimOf(j, 'w', now))).toEqual({ kind: 'fenced', job: j });
      }
      await expectStored(leg, j, createDueAttributes(j));
      const now = expiry + SKEW + 1;
      const want = afterClaim(j, 'w', now);
      expect(await leg.store.claim(claimOf(j, 'w', now))).toEqual({ kind: 'claimed', job: asStored(want) });
      await expectStored(leg, want, createDueAttributes(j));
    });

    it('a replayed claim (lost response) counts as claimed for its own owner only', async () => {
      const leg = await setup();
      const j = await given(leg);
      const input = claimOf(j, 'a', T0, { attemptTimeoutMs: 60_000, messageId: 'm' });
      const first = await leg.store.claim(input);
      const after = await snapshot(leg, j.id);
      expect(await leg.store.claim(input)).toEqual(first);
      expect(await snapshot(leg, j.id)).toEqual(after);
      expect(after.job).toMatchObject({ attempts: 1, leaseToken: 1 });
      expect(await leg.store.claim({ ...input, owner: 'b' })).toEqual({ kind: 'busy', job: after.job });
    });

    it("does not take a finished job for its owner's claim", async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      await leg.store.succeed({ job: mine, now: T0 + 1, result: 1, expiresAt: sec(T0) + 60, writer: 'a' });
      const result = await leg.store.claim(claimOf(j, 'a', T0));
      expect(result.kind).toBe('finished');
    });

    it('lets exactly one of several concurrent claims win', async () => {
      const leg = await setup();
      const j = await given(leg);
      const results: ClaimResult[] = await Promise.all(
        Array.from({ length: 6 }, (_, i) => leg.store.claim(claimOf(j, `w${i}`, T0))),
      );
      expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'busy')).toHaveLength(5);
      expect(await leg.store.get(j.id)).toMatchObject({ attempts: 1, leaseToken: 1 });
    });

    describe('the claim rule: the store claims exactly when claimVerdict says so, and refuses as it says', () => {
      /** The store's claim of `shape` by an `echo` delivery at T0, beside claimVerdict's of the stored job. */
      async function outcomes(leg: ContractLeg, shape: Partial<Job>, owner: string) {
        const j = await given(leg, shape);
        const verdict = claimVerdict(j, 'echo', T0);
        const result = await leg.store.claim({ id: j.id, type: 'echo', owner, now: T0, leaseMs: LEASE });
        if (result.kind === 'claimed') expect(result.job).toEqual(afterClaim(j, owner, T0));
        else expect(await leg.store.get(j.id)).toEqual(j);
        const expected = verdict.kind === 'claim' ? 'claimed' : verdict.kind;
        return { store: result.kind, verdict: expected, takeover: verdict.kind === 'claim' && verdict.takeover };
      }

      for (const [i, shape] of claimShapes(T0).entries()) {
        it(`${shape.name}: ${shape.expected}`, async () => {
          const leg = await setup();
          const { store, verdict, takeover } = await outcomes(leg, shape.job, `rule-${i}`);
          expect(store).toBe(verdict);
          const kind = verdict === 'claimed' ? (takeover ? 'takeover' : 'claim') : verdict;
          expect(kind).toBe(shape.expected);
        });
      }

      it("agrees with claimVerdict on any job shape near the rule's edges", async () => {
        const leg = await setup();
        let n = 0;
        await fc.assert(
          fc.asyncProperty(claimShapeArbitrary(T0), async (shape) => {
            n += 1;
            const { store, verdict } = await outcomes(leg, shape, `rule-any-${n}`);
            expect(store).toBe(verdict);
          }),
          { numRuns: 60 },
        );
      });
    });
  });

  describe('heartbeat and progress', () => {
    it('heartbeat extends the lease and leaves the due attributes; a replay applies again', async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      const due = (await leg.dueOf(j.id)) ?? {};
      const input = { job: mine, now: T0 + 3000, leaseMs: LEASE };
      await leg.store.heartbeat(input);
      const want = { ...mine, leaseExpiresAt: T0 + 3000 + LEASE };
      await expectStored(leg, want, due);
      await leg.store.heartbeat(input);
      await expectStored(leg, want, due);
    });

    it('progress records the running attempt’s progress; a replay applies again', async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      const due = (await leg.dueOf(j.id)) ?? {};
      const progress = { percent: 40, detail: 'half', at: iso(T0 + 1) };
      await leg.store.progress({ job: mine, progress });
      await leg.store.progress({ job: mine, progress });
      await expectStored(leg, { ...mine, progress }, due);
    });

    it('both throw LeaseLostError for a stale token, a job no longer running and a missing job', async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      const progress = { percent: 1, at: iso(T0) };
      const stale = { ...mine, leaseToken: 0 };
      const before = await snapshot(leg, j.id);
      await expect(leg.store.heartbeat({ job: stale, now: T0, leaseMs: LEASE })).rejects.toThrow(LeaseLostError);
      await expect(leg.store.progress({ job: stale, progress })).rejects.toThrow(LeaseLostError);
      expect(await snapshot(leg, j.id)).toEqual(before);
      const missing = { ...mine, id: `c-${run}-gone` };
      await expect(leg.store.heartbeat({ job: missing, now: T0, leaseMs: LEASE })).rejects.toThrow(LeaseLostError);
      await expect(leg.store.progress({ job: missing, progress })).rejects.toThrow(LeaseLostError);
      await leg.store.retry({ job: mine, now: T0 + 1, runAt: T0 + 5000, errors: [], expiresAt: 2e9, writer: 'a' });
      const retrying = await snapshot(leg, j.id);
      await expect(leg.store.heartbeat({ job: mine, now: T0, leaseMs: LEASE })).rejects.toThrow(LeaseLostError);
      await expect(leg.store.progress({ job: mine, progress })).rejects.toThrow(LeaseLostError);
      expect(await snapshot(leg, j.id)).toEqual(retrying);
    });
  });

  describe('writes that end an attempt', () => {
    /** `hold`: a fail with `hold` (a replay that diverged), which ends the job `held`. */
    type Ending = 'succeed' | 'retry' | 'fail' | 'hold';
    const TARGET: Record<Ending, JobState> = { succeed: 'succeeded', retry: 'retrying', fail: 'failed', hold: 'held' };
    const NOW = T0 + 2000;
    const errors = [attemptError(1, NOW, 'first')];

    function end(leg: ContractLeg, kind: Ending, job: Job, writer: string): Promise<unknown> {
      switch (kind) {
        case 'succeed':
          return leg.store.succeed({ job, now: NOW, result: { ok: 1 }, expiresAt: sec(NOW) + 3600, writer });
        case 'retry':
          return leg.store.retry({ job, now: NOW, runAt: NOW + 30_000, errors, expiresAt: sec(NOW) + 3600, writer });
        case 'fail':
          return leg.store.fail({ job, now: NOW, errors, expiresAt: sec(NOW) + 3600, writer });
        case 'hold':
          return leg.store.fail({ job, now: NOW, errors, expiresAt: sec(NOW) + 3600, writer, hold: true });
      }
    }

    /** The job and due attributes `end` stores. */
    function ended(kind: Ending, mine: Job, writer: string): { job: Job; due: DueAttributes } {
      const base: Job = { ...mine, state: TARGET[kind], updatedAt: iso(NOW), lastWriter: writer };
      delete base.leaseOwner;
      delete base.leaseExpiresAt;
      switch (kind) {
        case 'succeed':
          return {
            job: { ...base, finishedAt: iso(NOW), expiresAt: sec(NOW) + 3600, result: { ok: 1 } },
            due: {},
          };
        case 'retry': {
          // a retry writes no due entry (the sweep, or the entry the job has, covers it)
          return { job: { ...base, runAt: iso(NOW + 30_000), errors }, due: {} };
        }
        case 'fail':
        case 'hold':
          // held: the same write as a fail, to another state (the failed job's retention)
          return { job: { ...base, finishedAt: iso(NOW), expiresAt: sec(NOW) + 3600, errors }, due: {} };
      }
    }

    for (const kind of ['succeed', 'retry', 'fail', 'hold'] as const) {
      describe(kind, () => {
        it(`moves the running job to ${TARGET[kind]}, records the writer, drops the lease owner and expiry`, async () => {
          const leg = await setup();
          const j = await given(leg);
          const mine = await claimed(leg, j, 'a', T0);
          await end(leg, kind, mine, 'a');
          const want = ended(kind, mine, 'a');
          await expectStored(leg, want.job, want.due);
        });

        it('a replay by the same writer counts as applied and changes nothing', async () => {
          const leg = await setup();
          const j = await given(leg);
          const mine = await claimed(leg, j, 'a', T0);
          await end(leg, kind, mine, 'a');
          const after = await snapshot(leg, j.id);
          await end(leg, kind, mine, 'a');
          expect(await snapshot(leg, j.id)).toEqual(after);
        });

        it('the same write by another writer, under the same token, throws LeaseLostError', async () => {
          const leg = await setup();
          const j = await given(leg);
          const mine = await claimed(leg, j, 'a', T0);
          await end(leg, kind, mine, 'a');
          const after = await snapshot(leg, j.id);
          await expect(end(leg, kind, mine, 'b')).rejects.toThrow(LeaseLostError);
          expect(await snapshot(leg, j.id)).toEqual(after);
        });

        it('a stale token throws LeaseLostError and leaves the newer attempt alone', async () => {
          const leg = await setup();
          const j = await given(leg);
          const first = await claimed(leg, j, 'a', T0);
          const second = await claimed(leg, j, 'b', T0 + LEASE + SKEW + 1);
          const before = await snapshot(leg, j.id);
          await expect(end(leg, kind, first, 'a')).rejects.toThrow(LeaseLostError);
          expect(await snapshot(leg, j.id)).toEqual(before);
          expect(before.job).toEqual(second);
        });

        it('another ending already written under the same token throws LeaseLostError, even by the same writer', async () => {
          const leg = await setup();
          const j = await given(leg);
          const mine = await claimed(leg, j, 'a', T0);
          const other: Ending = kind === 'succeed' ? 'fail' : 'succeed';
          await end(leg, other, mine, 'a');
          const after = await snapshot(leg, j.id);
          await expect(end(leg, kind, mine, 'a')).rejects.toThrow(LeaseLostError);
          expect(await snapshot(leg, j.id)).toEqual(after);
        });

        it('a missing job throws LeaseLostError', async () => {
          const leg = await setup();
          const j = job();
          await expect(end(leg, kind, { ...j, leaseToken: 1, state: 'running' }, 'a')).rejects.toThrow(LeaseLostError);
          expect(await leg.store.get(j.id)).toBeUndefined();
        });
      });
    }

    it('succeed without a result stores none', async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      await leg.store.succeed({ job: mine, now: NOW, result: undefined, expiresAt: sec(NOW), writer: 'a' });
      const want = ended('succeed', mine, 'a').job;
      delete want.result;
      want.expiresAt = sec(NOW);
      await expectStored(leg, want, {});
    });

    it('a stale worker whose exhausted attempt another worker failed cannot take that failure for its own', async () => {
      const leg = await setup();
      const j = await given(leg, { maxAttempts: 1 });
      const a = await claimed(leg, j, 'a', T0);
      const exhausted = await leg.store.claim(claimOf(j, 'b', T0 + LEASE + SKEW + 1));
      if (exhausted.kind !== 'exhausted') throw new Error(`expected exhausted, got ${exhausted.kind}`);
      const bErrors = [attemptError(1, NOW, 'lease expired')];
      const input = { job: exhausted.job, now: NOW, errors: bErrors, expiresAt: sec(NOW) + 60, writer: 'b' };
      await leg.store.fail(input);
      const failed = await snapshot(leg, j.id);
      expect(failed.job).toMatchObject({ state: 'failed', lastWriter: 'b', leaseToken: a.leaseToken });
      await expect(
        leg.store.fail({ job: a, now: NOW, errors: [attemptError(1, NOW, 'mine')], expiresAt: 1, writer: 'a' }),
      ).rejects.toThrow(LeaseLostError);
      await leg.store.fail(input); // b's own replay
      expect(await snapshot(leg, j.id)).toEqual(failed);
    });

    it('retrying keeps the error history, and the next claim starts the next attempt with it', async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      await end(leg, 'retry', mine, 'a');
      const retrying = (await leg.store.get(j.id)) as Job;
      expect(retrying.lastError?.message).toBe('first');
      const now = NOW + 30_000;
      const want = afterClaim(retrying, 'b', now);
      expect(await leg.store.claim(claimOf(j, 'b', now))).toEqual({ kind: 'claimed', job: asStored(want) });
      expect(want).toMatchObject({ attempts: 2, leaseToken: 2, lastWriter: 'a', errors });
    });
  });

  describe('cost', () => {
    const NOW = T0 + 2000;
    const ttl = sec(NOW) + 3600;

    it("an ending with a cost records the job's: the delivery's, plus the write (and a retry's error item)", async () => {
      const leg = await setup();
      const j = await given(leg);
      const first = await claimed(leg, j, 'a', T0);
      const errors = [attemptError(1, NOW)];
      await leg.store.retry({
        job: first,
        now: NOW,
        runAt: NOW,
        errors,
        expiresAt: ttl,
        writer: 'a',
        cost: { requests: 4, writeUnits: 2 },
      });
      // a small job: its status write and its error item are 1 write unit each
      expect((await leg.store.get(j.id))?.cost).toEqual({ requests: 6, writeUnits: 4 });
      const second = await claimed(leg, j, 'b', NOW);
      expect(second.cost).toEqual({ requests: 6, writeUnits: 4 });
      const end = { job: second, now: NOW, result: { ok: 1 }, expiresAt: ttl, writer: 'b' };
      await leg.store.succeed({ ...end, cost: { requests: 2, writeUnits: 1 } });
      const done = await leg.store.get(j.id);
      expect(done?.cost).toEqual({ requests: 9, writeUnits: 6 });
      // a replay of the applied write (its response lost) changes nothing
      await leg.store.succeed({ ...end, cost: { requests: 3, writeUnits: 1 } });
      expect(await leg.store.get(j.id)).toEqual(done);
    });

    it('a fail with a cost counts its error item; an ending without a cost leaves the cost as it is', async () => {
      const leg = await setup();
      const j = await given(leg, { maxAttempts: 2 });
      const first = await claimed(leg, j, 'a', T0);
      await leg.store.retry({ job: first, now: NOW, runAt: NOW, errors: [], expiresAt: ttl, writer: 'a' });
      expect((await leg.store.get(j.id))?.cost).toBeUndefined();
      const second = await claimed(leg, j, 'b', NOW);
      const errors = [attemptError(2, NOW)];
      await leg.store.fail({ job: second, now: NOW, errors, expiresAt: ttl, writer: 'b', cost: NO_COST_INPUT });
      expect((await leg.store.get(j.id))?.cost).toEqual({ requests: 2, writeUnits: 2 });
    });
  });

  describe('error history', () => {
    it('retry and fail record the last entry of errors on top of the stored history; none when empty', async () => {
      const leg = await setup();
      const e1 = attemptError(1, T0, 'first');
      const j = await given(leg, { state: 'retrying', attempts: 1, leaseToken: 1, errors: [e1] });
      const second = await claimed(leg, j, 'a', T0);
      expect(second.errors).toEqual([e1]);
      const e2 = attemptError(2, T0 + 1, 'second');
      // the entries before the last are the caller's copy of the history: they do not replace it
      await leg.store.retry({
        job: second,
        now: T0 + 1,
        runAt: T0 + 1,
        errors: [attemptError(9, T0, 'other'), e2],
        expiresAt: sec(T0) + 3600,
        writer: 'a',
      });
      expect((await leg.store.get(j.id))?.errors).toEqual([e1, e2]);
      expect((await leg.store.get(j.id))?.lastError).toEqual(e2);
      const third = await claimed(leg, j, 'b', T0 + 2);
      expect(third.errors).toEqual([e1, e2]);
      await leg.store.fail({ job: third, now: T0 + 2, errors: [], expiresAt: sec(T0) + 3600, writer: 'b' });
      expect((await leg.store.get(j.id))?.errors).toEqual([e1, e2]);
      expect((await leg.store.get(j.id))?.lastError).toEqual(e2);
    });

    it(`gives the newest ${ERROR_HISTORY_LIMIT} errors, oldest first`, async () => {
      const leg = await setup();
      const j = await given(leg, { maxAttempts: ERROR_HISTORY_LIMIT + 3 });
      const all: AttemptError[] = [];
      for (let attempt = 1; attempt <= ERROR_HISTORY_LIMIT + 2; attempt++) {
        const mine = await claimed(leg, j, `w${attempt}`, T0 + attempt);
        const entry = attemptError(attempt, T0 + attempt, `e${attempt}`);
        all.push(entry);
        await leg.store.retry({
          job: mine,
          now: T0 + attempt,
          runAt: T0 + attempt,
          errors: [...mine.errors, entry],
          expiresAt: sec(T0) + 3600,
          writer: `w${attempt}`,
        });
      }
      expect((await leg.store.get(j.id))?.errors).toEqual(all.slice(-ERROR_HISTORY_LIMIT));
    });
  });

  describe('expire', () => {
    for (const state of ['queued', 'scheduled'] as const) {
      it(`ends a never-started ${state} job past its dispatchBy as expired and drops its due attributes`, async () => {
        const leg = await setup();
        const j = await given(leg, { state, dispatchBy: iso(T0 + 1000) });
        const now = T0 + 1001;
        expect(await leg.store.expire({ job: j, now, expiresAt: sec(now) + 60 })).toBe(true);
        const want = {
          ...j,
          state: 'expired' as const,
          finishedAt: iso(now),
          updatedAt: iso(now),
          expiresAt: sec(now) + 60,
        };
        await expectStored(leg, want, {});
        expect(await leg.store.expire({ job: j, now, expiresAt: sec(now) + 60 })).toBe(false);
        await expectStored(leg, want, {});
      });
    }

    it('refuses a job at its deadline, one that started, one without a deadline, and a missing one', async () => {
      const leg = await setup();
      const deadline = T0 + 1000;
      const jobs = [
        await given(leg, { dispatchBy: iso(deadline) }),
        await given(leg, { state: 'retrying', attempts: 1, leaseToken: 1, dispatchBy: iso(T0) }),
        await given(leg),
      ];
      expect(await leg.store.expire({ job: jobs[0] as Job, now: deadline, expiresAt: 1 })).toBe(false);
      for (const j of jobs.slice(1)) {
        expect(await leg.store.expire({ job: j, now: deadline + 60_000, expiresAt: 1 })).toBe(false);
      }
      for (const j of jobs) await expectStored(leg, j, createDueAttributes(j));
      expect(await leg.store.expire({ job: job({ dispatchBy: iso(T0) }), now: deadline, expiresAt: 1 })).toBe(false);
    });
  });

  describe('markWaiting', () => {
    const waiting = (ticket: number) => ({
      kind: 'concurrency' as const,
      limit: 0,
      key: 'tenant-1',
      ticket,
      since: iso(T0),
    });

    it('records why a due job waits, changing nothing else, and the claim that starts it clears it', async () => {
      const leg = await setup();
      const j = await given(leg, { flowKeys: ['tenant-1'] });
      expect(await leg.store.markWaiting({ job: j, waitingFor: waiting(3) })).toBe(true);
      await expectStored(leg, { ...j, waitingFor: waiting(3) }, createDueAttributes(j));
      // a later ticket replaces it
      expect(await leg.store.markWaiting({ job: j, waitingFor: waiting(7) })).toBe(true);
      await expectStored(leg, { ...j, waitingFor: waiting(7) }, createDueAttributes(j));
      const claim = await leg.store.claim({ id: j.id, type: j.type, owner: 'w', now: T0, leaseMs: LEASE });
      expect(claim.kind).toBe('claimed');
      expect((await leg.store.get(j.id))?.waitingFor).toBeUndefined();
      expect((await leg.store.get(j.id))?.flowKeys).toEqual(['tenant-1']);
    });

    it('refuses a running, a finished and a missing job', async () => {
      const leg = await setup();
      const running = await given(leg, { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + LEASE });
      const done = await given(leg, { state: 'succeeded', attempts: 1, leaseToken: 1, finishedAt: iso(T0) });
      for (const j of [running, done]) {
        expect(await leg.store.markWaiting({ job: j, waitingFor: waiting(1) })).toBe(false);
        expect((await leg.store.get(j.id))?.waitingFor).toBeUndefined();
      }
      expect(await leg.store.markWaiting({ job: job(), waitingFor: waiting(1) })).toBe(false);
    });

    it('with now, records it on a running job whose lease may no longer be held (a takeover waits), not on one whose may', async () => {
      const leg = await setup();
      const lease = { state: 'running' as const, attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + LEASE };
      const held = await given(leg, lease);
      // expired, but within the clock-skew bound of the expiry: it may still be held
      expect(await leg.store.markWaiting({ job: held, waitingFor: waiting(1), now: T0 + LEASE + 1000 })).toBe(false);
      expect((await leg.store.get(held.id))?.waitingFor).toBeUndefined();
      const lost = await given(leg, lease);
      expect(await leg.store.markWaiting({ job: lost, waitingFor: waiting(2), now: T0 + LEASE + 60_000 })).toBe(true);
      expect((await leg.store.get(lost.id))?.waitingFor).toEqual(waiting(2));
      const claim = await leg.store.claim({
        id: lost.id,
        type: lost.type,
        owner: 'w2',
        now: T0 + LEASE + 60_000,
        leaseMs: LEASE,
      });
      expect(claim.kind).toBe('claimed');
      expect((await leg.store.get(lost.id))?.waitingFor).toBeUndefined();
    });
  });

  describe('retry with refund', () => {
    it('gives back an attempt that never ran: attempts goes back by one, and a replay changes nothing more', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'queued', maxAttempts: 1 });
      const claim = await leg.store.claim({ id: j.id, type: j.type, owner: 'w', now: T0, leaseMs: LEASE });
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      expect(claim.job.attempts).toBe(1);
      const input = {
        job: claim.job,
        now: T0 + 1,
        runAt: T0 + 5000,
        errors: [],
        expiresAt: sec(T0) + 60,
        writer: 'w',
        refund: true,
      };
      await leg.store.retry(input);
      expect(await leg.store.get(j.id)).toMatchObject({
        state: 'retrying',
        attempts: 0,
        leaseToken: 1,
        runAt: iso(T0 + 5000),
      });
      await leg.store.retry(input); // a replay after a lost response: already applied
      expect((await leg.store.get(j.id))?.attempts).toBe(0);
      // its last (only) attempt is still there to run
      const again = await leg.store.claim({ id: j.id, type: j.type, owner: 'w2', now: T0 + 5000, leaseMs: LEASE });
      expect(again).toMatchObject({ kind: 'claimed', job: { attempts: 1, leaseToken: 2 } });
    });
  });

  describe('suspend and wake', () => {
    const sleepWait = (until: number) =>
      ({ kind: 'sleep', key: 'cool-off', until: iso(until), since: iso(T0 + 1) }) as const;

    it('ends the attempt as waiting: due at runAt, attempt given back, resumes + 1, lease dropped; the claim at runAt resumes it', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'queued', maxAttempts: 1 });
      const claim = await leg.store.claim(claimOf(j, 'w', T0));
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      const input = {
        job: claim.job,
        now: T0 + 1,
        runAt: T0 + 7_200_000,
        waitingFor: sleepWait(T0 + 7_200_000),
        writer: 'w',
      };
      await leg.store.suspend(input);
      const { leaseOwner: _o, leaseExpiresAt: _e, ...rest } = claim.job;
      const expected: Job = {
        ...rest,
        state: 'waiting',
        attempts: 0,
        runAt: iso(T0 + 7_200_000),
        updatedAt: iso(T0 + 1),
        lastWriter: 'w',
        resumes: 1,
        waitingFor: sleepWait(T0 + 7_200_000),
      };
      expect(await leg.store.get(j.id)).toEqual(asStored(expected));
      await leg.store.suspend(input); // a replay after a lost response: already applied
      expect((await leg.store.get(j.id))?.resumes).toBe(1);
      // another writer under the same token is not us
      await expect(leg.store.suspend({ ...input, writer: 'other' })).rejects.toBeInstanceOf(LeaseLostError);
      // not before its runAt; then its last (only) attempt is still there to run
      expect((await leg.store.claim(claimOf(j, 'w2', T0 + 60_000))).kind).toBe('early');
      const resumed = await leg.store.claim(claimOf(j, 'w3', T0 + 7_200_000));
      expect(resumed).toMatchObject({ kind: 'claimed', job: { attempts: 1, leaseToken: 2, resumes: 1 } });
      if (resumed.kind === 'claimed') expect(resumed.job.waitingFor).toBeUndefined();
    });

    it("a signal wait records waitSignal; wake makes only that signal's job due now, once", async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'queued' });
      const claim = await leg.store.claim(claimOf(j, 'w', T0));
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      const until = T0 + 86_400_000;
      await leg.store.suspend({
        job: claim.job,
        now: T0 + 1,
        runAt: until,
        waitingFor: { kind: 'signal', key: 'paid', until: iso(until), since: iso(T0 + 1) },
        writer: 'w',
      });
      expect(await leg.store.get(j.id)).toMatchObject({ state: 'waiting', waitSignal: 'paid', runAt: iso(until) });
      expect(await leg.store.wake({ id: j.id, signal: 'shipped', now: T0 + 10 })).toBeUndefined();
      expect(await leg.store.wake({ id: 'no-such-job', signal: 'paid', now: T0 + 10 })).toBeUndefined();
      const woken = await leg.store.wake({ id: j.id, signal: 'paid', now: T0 + 10 });
      expect(woken).toMatchObject({ id: j.id, state: 'waiting', runAt: iso(T0 + 10) });
      expect(woken?.waitSignal).toBeUndefined();
      // a replay (its response lost) finds the job woken by that signal: woken, nothing changed
      expect(await leg.store.wake({ id: j.id, signal: 'paid', now: T0 + 20 })).toMatchObject({
        state: 'waiting',
        runAt: iso(T0 + 10),
      });
      expect(await leg.store.wake({ id: j.id, signal: 'shipped', now: T0 + 20 })).toBeUndefined();
      const resumed = await leg.store.claim(claimOf(j, 'w2', T0 + 10));
      expect(resumed.kind).toBe('claimed');
      // a running job is not woken: it reads its inbox itself
      expect(await leg.store.wake({ id: j.id, signal: 'paid', now: T0 + 30 })).toBeUndefined();
    });

    it('resumes a job that waited past its dispatchBy: it had started', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'queued', dispatchBy: iso(T0 + 60_000) });
      const claim = await leg.store.claim(claimOf(j, 'w', T0));
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      await leg.store.suspend({
        job: claim.job,
        now: T0 + 1,
        runAt: T0 + 7_200_000,
        waitingFor: sleepWait(T0 + 7_200_000),
        writer: 'w',
      });
      expect(await leg.store.claim(claimOf(j, 'w2', T0 + 7_200_000))).toMatchObject({
        kind: 'claimed',
        job: { attempts: 1 },
      });
    });

    it('refuses a stale token and a job no longer running', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'queued' });
      const claim = await leg.store.claim(claimOf(j, 'w', T0));
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      const input = { job: claim.job, now: T0 + 1, runAt: T0 + 5_000, waitingFor: sleepWait(T0 + 5_000), writer: 'w' };
      await leg.store.succeed({ job: claim.job, now: T0 + 1, result: 1, expiresAt: sec(T0) + 60, writer: 'w' });
      await expect(leg.store.suspend(input)).rejects.toBeInstanceOf(LeaseLostError);
      expect(await leg.store.get(j.id)).toMatchObject({ state: 'succeeded' });
    });

    it('never claims a job waiting for its parents (blocked), whatever its runAt', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'waiting', pendingParents: 2 });
      const before = await snapshot(leg, j.id);
      expect(await leg.store.claim(claimOf(j, 'w', T0 + 60_000))).toEqual({ kind: 'blocked', job: asStored(j) });
      expect(await snapshot(leg, j.id)).toEqual(before);
      expect(before.due).toEqual({});
    });
  });

  describe('skip', () => {
    const reason = { kind: 'singleton' as const, key: 'acct-1', by: 'other-job', at: iso(T0) };

    it('ends a job that never started as skipped, with its reason and retention, and no waitingFor', async () => {
      const leg = await setup();
      for (const state of ['queued', 'scheduled'] as const) {
        const j = await given(leg, { state, singletonKey: 'acct-1' });
        await leg.store.markWaiting({
          job: j,
          waitingFor: { kind: 'singleton', limit: 0, key: 'acct-1', ticket: 0, since: iso(T0) },
        });
        expect(await leg.store.skip({ job: j, now: T0 + 5, expiresAt: sec(T0) + 60, reason })).toBe(true);
        await expectStored(
          leg,
          {
            ...j,
            state: 'skipped',
            skipReason: reason,
            finishedAt: iso(T0 + 5),
            updatedAt: iso(T0 + 5),
            expiresAt: sec(T0) + 60,
          },
          createDueAttributes(j),
        );
        // again: it changed (it is skipped already)
        expect(await leg.store.skip({ job: j, now: T0 + 6, expiresAt: sec(T0) + 61, reason })).toBe(false);
        // a claim finds it finished
        const claim = await leg.store.claim({ id: j.id, type: j.type, owner: 'w', now: T0 + 7, leaseMs: LEASE });
        expect(claim.kind).toBe('finished');
      }
    });

    it('refuses a job that ran in its series, a running or finished one, one under another token, and a missing one', async () => {
      const leg = await setup();
      const retrying = await given(leg, { state: 'retrying', attempts: 1, leaseToken: 1 });
      const running = await given(leg, { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + LEASE });
      const done = await given(leg, { state: 'succeeded', attempts: 1, leaseToken: 1, finishedAt: iso(T0) });
      // an operator's retry: queued again, attempts 0, but the token moved on since this copy
      const moved = await given(leg, { state: 'queued', attempts: 0, leaseToken: 2, retries: 1 });
      for (const j of [retrying, running, done]) {
        expect(await leg.store.skip({ job: j, now: T0, expiresAt: sec(T0) + 60, reason })).toBe(false);
        expect((await leg.store.get(j.id))?.state).toBe(j.state);
      }
      expect(await leg.store.skip({ job: { ...moved, leaseToken: 1 }, now: T0, expiresAt: 1, reason })).toBe(false);
      expect((await leg.store.get(moved.id))?.state).toBe('queued');
      expect(await leg.store.skip({ job: job(), now: T0, expiresAt: sec(T0) + 60, reason })).toBe(false);
    });

    it('with beforeSeq, ends only a job of a lower debounce seq (or one without a seq)', async () => {
      const leg = await setup();
      const debounce = { kind: 'debounce' as const, key: 'c1', by: 'newer', at: iso(T0) };
      const later = await given(leg, { state: 'queued', debounceKey: 'c1', debounceWindow: T0, debounceSeq: 5 });
      const same = await given(leg, { state: 'queued', debounceKey: 'c1', debounceWindow: T0, debounceSeq: 4 });
      const earlier = await given(leg, { state: 'queued', debounceKey: 'c1', debounceWindow: T0, debounceSeq: 3 });
      const unnumbered = await given(leg, { state: 'queued', debounceKey: 'c1', debounceWindow: T0 });
      for (const j of [later, same]) {
        expect(await leg.store.skip({ job: j, now: T0, expiresAt: sec(T0) + 60, reason: debounce, beforeSeq: 4 })).toBe(
          false,
        );
        expect(await leg.store.get(j.id)).toMatchObject({ state: 'queued', debounceSeq: j.debounceSeq });
      }
      for (const j of [earlier, unnumbered]) {
        expect(await leg.store.skip({ job: j, now: T0, expiresAt: sec(T0) + 60, reason: debounce, beforeSeq: 4 })).toBe(
          true,
        );
        expect((await leg.store.get(j.id))?.state).toBe('skipped');
      }
    });
  });

  describe('control.cancel', () => {
    const cancelInput = (
      j: Job,
      now: number,
      from: readonly JobState[] = ['scheduled', 'queued', 'running', 'retrying'],
    ) => ({
      // no type: the API cancels without reading the job first
      id: j.id,
      from,
      now,
      expiresAt: sec(now) + 3600,
    });

    for (const state of ['scheduled', 'queued', 'retrying'] as const) {
      it(`cancels a ${state} job: finishedAt, expiresAt, no due attributes`, async () => {
        const leg = await setup();
        const j = await given(leg, { state, ...(state === 'retrying' ? { attempts: 1, leaseToken: 1 } : {}) });
        const result = await leg.control.cancel(cancelInput(j, T0 + 500));
        const want = {
          ...j,
          state: 'cancelled' as const,
          finishedAt: iso(T0 + 500),
          updatedAt: iso(T0 + 500),
          expiresAt: sec(T0 + 500) + 3600,
        };
        expect(result).toEqual({ kind: 'applied', job: asStored(want), previous: j });
        await expectStored(leg, want, {});
      });
    }

    it('records who cancelled and then retried, on the job, by the same writes; who enqueued stays', async () => {
      const leg = await setup();
      const j = await given(leg, { enqueuedBy: 'arn:aws:sts::123456789012:assumed-role/billing/i-1' });
      const by = 'arn:aws:sts::123456789012:assumed-role/ops/alice';
      const cancelled = await leg.control.cancel({ ...cancelInput(j, T0 + 500), by });
      if (cancelled.kind !== 'applied') throw new Error(`expected the cancel to apply, got ${cancelled.kind}`);
      expect(cancelled.job.controls).toEqual([{ action: 'cancel', by, at: iso(T0 + 500) }]);
      const retried = await leg.control.restart({
        id: j.id,
        types: [j.type],
        from: ['cancelled'],
        now: T0 + 900,
        by: 'root',
      });
      if (retried.kind !== 'applied') throw new Error(`expected the retry to apply, got ${retried.kind}`);
      const stored = await leg.store.get(j.id);
      expect(stored?.controls).toEqual([
        { action: 'cancel', by, at: iso(T0 + 500) },
        { action: 'retry', by: 'root', at: iso(T0 + 900) },
      ]);
      expect(stored?.enqueuedBy).toBe('arn:aws:sts::123456789012:assumed-role/billing/i-1');
      expect(retried.job.controls).toEqual(stored?.controls);
    });

    it('records a rerun as a rerun, a plain retry as a retry', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'failed', attempts: 1, finishedAt: iso(T0 + 100), expiresAt: 1_900_000_000 });
      const rerun = await leg.control.restart({
        id: j.id,
        from: ['failed'],
        now: T0 + 500,
        by: 'alice',
        rerun: { seen: j, journal: 'r1.a' },
      });
      if (rerun.kind !== 'applied') throw new Error(`expected the rerun to apply, got ${rerun.kind}`);
      expect(rerun.job.controls).toEqual([{ action: 'rerun', by: 'alice', at: iso(T0 + 500) }]);
      expect((await leg.store.get(j.id))?.controls).toEqual(rerun.job.controls);
    });

    it('keeps the newest 20 operator actions: a cancel and a retry of a job that has 20 drop the oldest', async () => {
      const leg = await setup();
      const old = Array.from({ length: 20 }, (_, i) => ({ action: 'retry' as const, by: `op-${i}`, at: iso(T0 + i) }));
      const j = await given(leg, { controls: old });
      const cancelled = await leg.control.cancel({ ...cancelInput(j, T0 + 500), by: 'alice' });
      if (cancelled.kind !== 'applied') throw new Error(`expected the cancel to apply, got ${cancelled.kind}`);
      const afterCancel = [...old.slice(1), { action: 'cancel', by: 'alice', at: iso(T0 + 500) }];
      expect(cancelled.job.controls).toEqual(afterCancel);
      expect((await leg.store.get(j.id))?.controls).toEqual(afterCancel);
      const retried = await leg.control.restart({ id: j.id, from: ['cancelled'], now: T0 + 900, by: 'bob' });
      if (retried.kind !== 'applied') throw new Error(`expected the retry to apply, got ${retried.kind}`);
      const afterRetry = [...afterCancel.slice(1), { action: 'retry', by: 'bob', at: iso(T0 + 900) }];
      expect((await leg.store.get(j.id))?.controls).toEqual(afterRetry);
      expect(retried.job.controls).toEqual(afterRetry);
      // a full list does not make a write its state refuses apply: refused, unchanged
      const before = await snapshot(leg, j.id);
      const refused = await leg.control.cancel({ ...cancelInput(j, T0 + 990, ['failed']), by: 'carol' });
      expect(refused.kind).toBe('refused');
      expect(await snapshot(leg, j.id)).toEqual(before);
    });

    it('counts a replay of the same cancel (its first response lost) as applied, and a later cancel as refused', async () => {
      const leg = await setup();
      const j = await given(leg);
      const first = await leg.control.cancel(cancelInput(j, T0 + 500));
      if (first.kind !== 'applied') throw new Error(`expected the cancel to apply, got ${first.kind}`);
      // the replay does not know the job as it was before the first try
      expect(await leg.control.cancel(cancelInput(j, T0 + 500))).toEqual({ kind: 'applied', job: first.job });
      expect((await leg.control.cancel(cancelInput(j, T0 + 900))).kind).toBe('refused');
    });

    it('cancels a running job: drops the owner, keeps the token and the lease expiry; the worker is fenced out', async () => {
      const leg = await setup();
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      const result = await leg.control.cancel(cancelInput(j, T0 + 500));
      const want: Job = {
        ...mine,
        state: 'cancelled',
        finishedAt: iso(T0 + 500),
        updatedAt: iso(T0 + 500),
        expiresAt: sec(T0 + 500) + 3600,
      };
      delete want.leaseOwner;
      expect(want.leaseExpiresAt).toBe(T0 + LEASE);
      expect(result).toEqual({ kind: 'applied', job: asStored(want), previous: mine });
      await expectStored(leg, want, {});
      await expect(leg.store.heartbeat({ job: mine, now: T0 + 600, leaseMs: LEASE })).rejects.toThrow(LeaseLostError);
      await expect(
        leg.store.succeed({ job: mine, now: T0 + 600, result: 1, expiresAt: 1, writer: 'a' }),
      ).rejects.toThrow(LeaseLostError);
      await expectStored(leg, want, {});
    });

    it('refuses a job in a state not listed or of another type, unchanged; a second cancel is refused; missing is missing', async () => {
      const leg = await setup();
      const j = await given(leg);
      const before = await snapshot(leg, j.id);
      expect(await leg.control.cancel(cancelInput(j, T0, ['running']))).toEqual({ kind: 'refused', job: j });
      expect(await leg.control.cancel({ ...cancelInput(j, T0), type: 'sleep' })).toEqual({ kind: 'refused', job: j });
      expect(await snapshot(leg, j.id)).toEqual(before);
      const input = cancelInput(j, T0 + 1);
      const applied = await leg.control.cancel(input);
      expect(applied.kind).toBe('applied');
      const after = await snapshot(leg, j.id);
      expect(await leg.control.cancel({ ...input, now: T0 + 2 })).toEqual({ kind: 'refused', job: after.job });
      expect(await snapshot(leg, j.id)).toEqual(after);
      expect(await leg.control.cancel({ ...input, id: `c-${run}-none` })).toEqual({ kind: 'missing' });
    });

    it('with a type, cancels only a job of that type', async () => {
      const leg = await setup();
      const j = await given(leg);
      const result = await leg.control.cancel({ ...cancelInput(j, T0 + 500), type: 'echo' });
      expect(result).toMatchObject({ kind: 'applied', job: { state: 'cancelled' }, previous: j });
    });

    it('with types (a grant scoped by type), cancels only a job of one of them; another is refused, unchanged', async () => {
      const leg = await setup();
      const j = await given(leg);
      const before = await snapshot(leg, j.id);
      expect(await leg.control.cancel({ ...cancelInput(j, T0 + 500), types: ['mail'] })).toEqual({
        kind: 'refused',
        job: j,
      });
      expect(await snapshot(leg, j.id)).toEqual(before);
      expect(await leg.control.cancel({ ...cancelInput(j, T0 + 500), types: [] })).toEqual({ kind: 'refused', job: j });
      const result = await leg.control.cancel({ ...cancelInput(j, T0 + 500), types: ['mail', j.type] });
      expect(result).toMatchObject({ kind: 'applied', job: { state: 'cancelled' }, previous: j });
    });

    it('refuses a job past its retention (expiresAt before now), unchanged', async () => {
      const leg = await setup();
      const j = await given(leg, { expiresAt: sec(T0) });
      const before = await snapshot(leg, j.id);
      expect(await leg.control.cancel(cancelInput(j, T0 + 1000))).toEqual({ kind: 'refused', job: j });
      expect(await snapshot(leg, j.id)).toEqual(before);
      // up to its expiry it is still there
      expect((await leg.control.cancel(cancelInput(j, T0))).kind).toBe('applied');
    });
  });

  describe('control.restart', () => {
    // no type, the deployed types: the API retries without reading the job first
    const restartInput = (j: Job, now: number, from: readonly JobState[] = ['failed', 'cancelled', 'expired']) => ({
      id: j.id,
      types: ['mail', j.type],
      from,
      now,
    });

    /** What a restart at `now` stores. */
    function restarted(j: Job, now: number): Job {
      const next: Job = { ...j, state: 'queued', attempts: 0, runAt: iso(now), updatedAt: iso(now) };
      next.retries = (j.retries ?? 0) + 1;
      for (const field of [
        'expiresAt',
        'finishedAt',
        'startedAt',
        'leaseOwner',
        'result',
        'progress',
        'dispatchBy',
      ] as const) {
        delete next[field];
      }
      return next;
    }

    it('counts a replay of the same restart (its first response lost) as applied, and a later one as refused', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'failed', attempts: 3, leaseToken: 3 });
      const first = await leg.control.restart(restartInput(j, T0 + 500));
      const job = asStored(restarted(j, T0 + 500));
      expect(first).toEqual({ kind: 'applied', job, previous: j });
      // the replay does not know the job as it was before the first try
      expect(await leg.control.restart(restartInput(j, T0 + 500))).toEqual({ kind: 'applied', job });
      expect((await leg.control.restart(restartInput(j, T0 + 900))).kind).toBe('refused');
    });

    it('starts a new series: queued, attempts 0, runAt now, retries + 1; keeps token, lease expiry, errors, writer', async () => {
      const leg = await setup();
      const j = await given(leg, {
        state: 'failed',
        attempts: 3,
        leaseToken: 3,
        leaseOwner: 'left-behind',
        leaseMessage: 'm-3',
        leaseExpiresAt: T0 + LEASE,
        lastWriter: 'w3',
        errors: [attemptError(3, T0)],
        result: { partial: true },
        progress: { percent: 90, at: iso(T0) },
        dispatchBy: iso(T0 + 1),
        startedAt: iso(T0),
        finishedAt: iso(T0 + 1),
        expiresAt: sec(T0) + 3600,
      });
      const now = T0 + 60_000;
      const result = await leg.control.restart(restartInput(j, now));
      const want = restarted(j, now);
      expect(want).toMatchObject({ retries: 1, leaseToken: 3, leaseExpiresAt: T0 + LEASE, lastWriter: 'w3' });
      expect(result).toEqual({ kind: 'applied', job: asStored(want), previous: j });
      await expectStored(leg, want, jobDueAttributes(want));
      // a second restart of the same series counts one more retry
      const again = await leg.control.restart(restartInput(j, now + 1, ['queued']));
      const twice = restarted(want, now + 1);
      expect(again).toEqual({ kind: 'applied', job: asStored(twice), previous: asStored(want) });
      expect(twice.retries).toBe(2);
    });

    it('refuses a job in a state not listed or of another type, unchanged; missing is missing', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'succeeded', expiresAt: sec(T0) + 3600 });
      expect(await leg.control.restart(restartInput(j, T0))).toEqual({ kind: 'refused', job: j });
      expect(await leg.control.restart({ ...restartInput(j, T0, ['succeeded']), type: 'sleep' })).toEqual({
        kind: 'refused',
        job: j,
      });
      expect(await leg.control.restart({ ...restartInput(j, T0, ['succeeded']), types: ['sleep'] })).toEqual({
        kind: 'refused',
        job: j,
      });
      expect(await leg.control.restart({ ...restartInput(j, T0, ['succeeded']), types: [] })).toEqual({
        kind: 'refused',
        job: j,
      });
      await expectStored(leg, j, {});
      expect(await leg.control.restart({ ...restartInput(j, T0), id: `c-${run}-none` })).toEqual({ kind: 'missing' });
    });

    it('refuses a job past its retention (expiresAt before now), unchanged; with a type, restarts only that type', async () => {
      const leg = await setup();
      const j = await given(leg, { state: 'failed', attempts: 1, leaseToken: 1, expiresAt: sec(T0) + 10 });
      expect(await leg.control.restart(restartInput(j, T0 + 11_000))).toEqual({ kind: 'refused', job: j });
      await expectStored(leg, j, {});
      expect((await leg.control.restart({ id: j.id, type: 'sleep', from: ['failed'], now: T0 })).kind).toBe('refused');
      const result = await leg.control.restart({ id: j.id, type: 'echo', from: ['failed'], now: T0 + 10_000 });
      expect(result).toEqual({ kind: 'applied', job: asStored(restarted(j, T0 + 10_000)), previous: j });
    });

    it('cancel, then restart, of a running job: no new attempt while the cancelled one may run', async () => {
      const leg = await setup();
      const j = await given(leg);
      const a = await claimed(leg, j, 'a', T0);
      expect(
        (await leg.control.cancel({ id: j.id, from: ['running'], now: T0 + 1000, expiresAt: sec(T0) + 3600 })).kind,
      ).toBe('applied');
      const restart = await leg.control.restart(restartInput(j, T0 + 2000));
      if (restart.kind !== 'applied') throw new Error(`expected the restart to apply, got ${restart.kind}`);
      expect(restart.job).toMatchObject({ state: 'queued', leaseToken: 1, leaseExpiresAt: T0 + LEASE });
      const fence = T0 + LEASE + SKEW;
      for (const now of [T0 + 2000, fence]) {
        expect(await leg.store.claim(claimOf(j, 'b', now))).toEqual({ kind: 'fenced', job: restart.job });
      }
      const now = fence + 1;
      const want = afterClaim(restart.job, 'b', now);
      expect(await leg.store.claim(claimOf(j, 'b', now))).toEqual({ kind: 'claimed', job: asStored(want) });
      expect(want).toMatchObject({ attempts: 1, leaseToken: 2, retries: 1 });
      await expect(leg.store.succeed({ job: a, now, result: 'late', expiresAt: 1, writer: 'a' })).rejects.toThrow(
        LeaseLostError,
      );
      // the restart's due entry stays where it was: the claim writes none
      await expectStored(leg, want, jobDueAttributes({ ...restart.job, runAt: iso(T0 + 2000) }));
    });

    it('a restarted expired job has no dispatchBy any more, so it runs', async () => {
      const leg = await setup();
      const j = await given(leg, { dispatchBy: iso(T0 + 1) });
      expect(await leg.store.expire({ job: j, now: T0 + 2, expiresAt: sec(T0) + 60 })).toBe(true);
      const restart = await leg.control.restart(restartInput(j, T0 + 5000));
      if (restart.kind !== 'applied') throw new Error(`expected the restart to apply, got ${restart.kind}`);
      expect(restart.job.dispatchBy).toBeUndefined();
      expect((await leg.store.claim(claimOf(j, 'w', T0 + 5000))).kind).toBe('claimed');
    });
  });

  describe('a held job (its replay diverged)', () => {
    const NOW = T0 + 2000;
    const errors: AttemptError[] = [
      { attempt: 1, at: iso(NOW), reason: 'nondeterministic', name: 'NondeterminismError', message: 'diverged' },
    ];

    async function heldJob(leg: ContractLeg): Promise<Job> {
      const j = await given(leg);
      const mine = await claimed(leg, j, 'a', T0);
      await leg.store.fail({ job: mine, now: NOW, errors, expiresAt: sec(NOW) + 3600, writer: 'a', hold: true });
      const held = (await leg.store.get(j.id)) as Job;
      expect(held).toMatchObject({ state: 'held', attempts: 1, lastError: errors[0] });
      return held;
    }

    it('is claimed by no delivery (refused as finished) and changes nothing', async () => {
      const leg = await setup();
      const held = await heldJob(leg);
      const before = await snapshot(leg, held.id);
      const claim = await leg.store.claim(claimOf(held, 'b', NOW + 60 * 60_000));
      expect(claim).toEqual({ kind: 'finished', job: before.job });
      expect(await snapshot(leg, held.id)).toEqual(before);
    });

    it("an operator's retry (or rerun) makes it queued; undone, it is held again", async () => {
      const leg = await setup();
      const held = await heldJob(leg);
      const input = { id: held.id, types: ['echo'], from: ['held', 'failed'] as JobState[], now: NOW + 5000 };
      const result = await leg.control.restart(input);
      expect(result).toMatchObject({ kind: 'applied', job: { state: 'queued', attempts: 0, retries: 1 } });
      expect(result.kind === 'applied' ? result.previous : undefined).toEqual(held);
      expect(await leg.control.undoRestart({ previous: held, retries: 1 })).toBe(true);
      expect(await leg.store.get(held.id)).toMatchObject({ state: 'held', attempts: 1, retries: 0 });
      // a restart that does not take held leaves it alone
      const refused = await leg.control.restart({ ...input, from: ['failed'], now: NOW + 9000 });
      expect(refused).toMatchObject({ kind: 'refused', job: { state: 'held' } });
    });

    it("an operator's cancel ends it cancelled", async () => {
      const leg = await setup();
      const held = await heldJob(leg);
      const now = NOW + 5000;
      const result = await leg.control.cancel({
        id: held.id,
        from: ['running', 'waiting', 'held'],
        now,
        expiresAt: sec(now) + 3600,
      });
      const want = { ...held, state: 'cancelled' as const, finishedAt: iso(now), updatedAt: iso(now) };
      want.expiresAt = sec(now) + 3600;
      expect(result).toEqual({ kind: 'applied', job: asStored(want), previous: held });
    });
  });

  describe('control.undoRestart', () => {
    it('puts back the previous state, attempts, times and TTL while the restarted job has not started', async () => {
      const leg = await setup();
      const previous = await given(leg, {
        state: 'expired',
        dispatchBy: iso(T0 + 1),
        finishedAt: iso(T0 + 2),
        expiresAt: sec(T0) + 3600,
        retries: 2,
        progress: { percent: 5, at: iso(T0) },
      });
      const restart = await leg.control.restart({ id: previous.id, type: 'echo', from: ['expired'], now: T0 + 9000 });
      if (restart.kind !== 'applied') throw new Error(`expected the restart to apply, got ${restart.kind}`);
      expect(await leg.control.undoRestart({ previous, retries: 3 })).toBe(true);
      const want: Job = {
        ...restart.job,
        state: 'expired',
        attempts: previous.attempts,
        runAt: previous.runAt,
        updatedAt: previous.updatedAt,
        retries: 2,
        dispatchBy: iso(T0 + 1),
        finishedAt: iso(T0 + 2),
        expiresAt: sec(T0) + 3600,
      };
      // the restart's due entry stays (the supervisor finds the job finished when it comes)
      const due = jobDueAttributes({ ...restart.job, state: 'queued' });
      expect(due.dueAt).toBe(T0 + 9000 + 10 * 60_000);
      await expectStored(leg, want, due);
      // a replay finds the job moved on
      expect(await leg.control.undoRestart({ previous, retries: 3 })).toBe(false);
      await expectStored(leg, want, due);
    });

    it('refuses once an attempt started, with another retries count, another type, or no job', async () => {
      const leg = await setup();
      const previous = await given(leg, { state: 'failed', attempts: 1, leaseToken: 1, expiresAt: sec(T0) + 60 });
      const restart = await leg.control.restart({ id: previous.id, type: 'echo', from: ['failed'], now: T0 + 9000 });
      if (restart.kind !== 'applied') throw new Error(`expected the restart to apply, got ${restart.kind}`);
      expect(await leg.control.undoRestart({ previous, retries: 2 })).toBe(false);
      expect(await leg.control.undoRestart({ previous: { ...previous, type: 'sleep' }, retries: 1 })).toBe(false);
      await expectStored(leg, restart.job, jobDueAttributes(restart.job));
      const mine = await claimed(leg, previous, 'w', T0 + 9000);
      expect(await leg.control.undoRestart({ previous, retries: 1 })).toBe(false);
      expect(await leg.store.get(previous.id)).toEqual(mine);
      expect(await leg.control.undoRestart({ previous: { ...previous, id: `c-${run}-none` }, retries: 1 })).toBe(false);
    });
  });
}
