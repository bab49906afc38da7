/**
 * Singletons on local AWS (DynamoDB Local, the SQS emulator) through the real SDK and the API:
 * a scope shared by two job types, and the `skip` and `cancel-running` modes. Handlers record
 * their start and end times (the real clock, one process).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { maxOverlap } from '../support/held-handlers';
import { enqueueNew, until as untilWithin } from '../support/local-api';

let aws: LocalAws;
beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});
afterAll(async () => {
  await aws?.stop();
});

const payload = z.object({ acct: z.string(), ms: z.number() });
type Run = { id: string; acct: string; start: number; end: number; aborted: boolean };

/** A handler that sleeps `ms` (or until aborted), recording its run. */
function recorder(runs: Run[]) {
  return async (p: unknown, ctx: { jobId: string; signal: AbortSignal }) => {
    const { acct, ms } = p as { acct: string; ms: number };
    const run: Run = { id: ctx.jobId, acct, start: Date.now(), end: 0, aborted: false };
    runs.push(run);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      ctx.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          run.aborted = true;
          resolve();
        },
        { once: true },
      );
    });
    run.end = Date.now();
    if (run.aborted) throw ctx.signal.reason;
    return { ok: true };
  };
}

/** Polls `what` until it holds (at most 60_000 ms unless given). */
const until = (what: () => Promise<boolean> | boolean, ms = 60_000) => untilWithin(what, ms);

describe('singletons on local AWS', () => {
  it('never runs two jobs of one key at once in a scope shared by two types, and runs them all', async () => {
    const runs: Run[] = [];
    const typeIn = (type: string): JobDefinition => ({
      spec: defineJobType({ type, payload, singleton: { key: (p) => p.acct, mode: 'queue', scope: 'account-io' } }),
      run: recorder(runs) as never,
    });
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('single'),
      jobs: [typeIn('report'), typeIn('export')],
      logger: createLogger({ level: 'error' }),
      leaseMs: 3000,
    });
    try {
      const ids: string[] = [];
      await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const id = `sc-${i}`;
          ids.push(id);
          await enqueueNew(platform.url, {
            id,
            type: i % 2 === 0 ? 'report' : 'export',
            payload: { acct: `acct-${i % 3}`, ms: 80 + ((i * 37) % 120) },
          });
        }),
      );
      await until(async () =>
        (await Promise.all(ids.map((id) => platform.store.get(id)))).every((j) => j?.state === 'succeeded'),
      );
      // every job ran (one whose lease was lost on a loaded machine runs again: never at once)
      expect(new Set(runs.map((r) => r.id)).size).toBe(24);
      for (const acct of ['acct-0', 'acct-1', 'acct-2']) {
        const mine = runs.filter((r) => r.acct === acct);
        expect(new Set(mine.map((r) => r.id)).size).toBe(8);
        expect(maxOverlap(mine), acct).toBe(1);
      }
      expect(maxOverlap(runs), 'different keys ran at once').toBeGreaterThan(1);
      // the last job gives its slot back just after its success is written
      const keyState = () =>
        fetch(`${platform.url}/types/export/keys/acct-0`).then(
          (r) => r.json() as Promise<{ singleton?: { running?: unknown[] } }>,
        );
      await until(async () => (await keyState()).singleton?.running?.length === 0, 10_000);
      expect(await keyState()).toMatchObject({
        singleton: { scope: 'account-io', mode: 'queue', running: [], waiting: 0 },
      });
    } finally {
      await platform.stop();
    }
  }, 120_000);

  it('skip: a job whose key runs ends skipped, naming the running job; cancel-running: the running job is cancelled and stops before the new one starts', async () => {
    const runs: Run[] = [];
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('single-modes'),
      jobs: [
        {
          spec: defineJobType({ type: 'sync-skip', payload, singleton: { key: (p) => p.acct, mode: 'skip' } }),
          run: recorder(runs) as never,
        },
        {
          spec: defineJobType({
            type: 'sync-latest',
            payload,
            retry: { maxAttempts: 1 },
            singleton: { key: (p) => p.acct, mode: 'cancel-running' },
          }),
          run: recorder(runs) as never,
        },
      ],
      logger: createLogger({ level: 'error' }),
      leaseMs: 3000, // heartbeats every second: a cancel is noticed within about a second
    });
    try {
      // skip
      await enqueueNew(platform.url, { id: 'sk-a', type: 'sync-skip', payload: { acct: 'a1', ms: 3000 } });
      await until(() => runs.some((r) => r.id === 'sk-a'));
      await enqueueNew(platform.url, { id: 'sk-b', type: 'sync-skip', payload: { acct: 'a1', ms: 10 } });
      await enqueueNew(platform.url, { id: 'sk-c', type: 'sync-skip', payload: { acct: 'a2', ms: 10 } });
      await until(async () => (await platform.store.get('sk-b'))?.state === 'skipped');
      expect(await platform.store.get('sk-b')).toMatchObject({
        attempts: 0,
        skipReason: { kind: 'singleton', key: 'a1', by: 'sk-a' },
      });
      await until(async () => (await platform.store.get('sk-c'))?.state === 'succeeded');
      await until(async () => (await platform.store.get('sk-a'))?.state === 'succeeded');
      expect(runs.some((r) => r.id === 'sk-b')).toBe(false);

      // cancel-running
      await enqueueNew(platform.url, { id: 'cr-a', type: 'sync-latest', payload: { acct: 'a1', ms: 30_000 } });
      await until(() => runs.some((r) => r.id === 'cr-a'));
      await enqueueNew(platform.url, { id: 'cr-b', type: 'sync-latest', payload: { acct: 'a1', ms: 50 } });
      await until(async () => (await platform.store.get('cr-b'))?.state === 'succeeded', 30_000);
      expect((await platform.store.get('cr-a'))?.state).toBe('cancelled');
      const a = runs.find((r) => r.id === 'cr-a');
      const b = runs.find((r) => r.id === 'cr-b');
      expect(a?.aborted).toBe(true);
      expect(b && a && b.start >= a.end, 'the new job started only after the cancelled one stopped').toBe(true);
      const key = await fetch(`${platform.url}/types/sync-latest/keys/a1`).then((r) => r.json());
      expect(key).toMatchObject({ singleton: { mode: 'cancel-running', running: [], waiting: 0 } });
    } finally {
      await platform.stop();
    }
  }, 120_000);
});
