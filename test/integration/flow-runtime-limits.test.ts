/**
 * A concurrency limit set at run time, on local AWS (DynamoDB Local, the SQS emulator) through the
 * API: a type with a limit of 2 per tenant. The tenant's limit set to 1 lets only one of its jobs
 * run while the others wait; raised to 3, it starts two waiting jobs at once (the PUT hands them
 * their places and sends their messages); removed, the spec's 2 holds again. Another tenant keeps
 * the spec's limit throughout, and the slots drain to nothing.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
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

type Run = { id: string; tenant: string; start: number; end: number };
type KeyLimit = { limit: number; specLimit: number; source: string; running: unknown[]; waiting: number };

/** Polls `what` until it holds (at most 30_000 ms unless given). */
const until = (what: () => Promise<boolean> | boolean, ms = 30_000) => untilWithin(what, ms);

describe('limits set at run time on local AWS', () => {
  it('holds a lowered limit from the next start, starts waiting jobs when raised, and falls back when removed', async () => {
    const runs: Run[] = [];
    /** Jobs let go: a handler runs until its id is here. */
    const released = new Set<string>();
    const spec = defineJobType({
      type: 'tiered-sync',
      payload: z.object({ tenant: z.string() }),
      concurrency: [{ limit: 2, key: (p) => p.tenant }],
    });
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('limits'),
      jobs: [
        {
          spec,
          run: (async (p: { tenant: string }, ctx: { jobId: string }) => {
            const run: Run = { id: ctx.jobId, tenant: p.tenant, start: Date.now(), end: 0 };
            runs.push(run);
            while (!released.has(ctx.jobId)) await new Promise((r) => setTimeout(r, 50));
            run.end = Date.now();
            return { ok: true };
          }) as never,
        },
      ],
      logger: createLogger({ level: 'error' }),
      leaseMs: 20_000,
      // handlers are held until released: one job a delivery, and room for all of them at once
      runner: { batchSize: 1, maxConcurrency: 10 },
    });
    const limits = async (method: 'PUT' | 'DELETE', tenant: string, body?: unknown) => {
      const response = await fetch(`${platform.url}/types/tiered-sync/keys/${tenant}/limits`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { limits: KeyLimit[]; handedOn: string[] };
    };
    const running = (tenant: string) => runs.filter((r) => r.tenant === tenant && r.end === 0).length;
    try {
      // a free tenant: 1 at a time
      const lowered = await limits('PUT', 't1', { concurrency: 1 });
      expect(lowered.limits[0]).toMatchObject({ limit: 1, specLimit: 2, source: 'runtime' });
      const ids = ['a', 'b', 'c', 'd'].map((x) => `t1-${x}`);
      for (const id of ids) await enqueueNew(platform.url, { id, type: 'tiered-sync', payload: { tenant: 't1' } });
      const others = ['t2-a', 't2-b'];
      for (const id of others) await enqueueNew(platform.url, { id, type: 'tiered-sync', payload: { tenant: 't2' } });
      // three of t1 wait in line behind the one running; t2 runs two at once (the spec's limit)
      await until(
        async () =>
          (await Promise.all(ids.map((id) => platform.store.get(id)))).filter((j) => j?.waitingFor !== undefined)
            .length === 3,
      );
      await until(() => running('t2') === 2);
      expect(running('t1')).toBe(1);

      // a paying tenant now: two more start at once, without waiting for the running one
      const raised = await limits('PUT', 't1', { concurrency: 3 });
      expect(raised.handedOn).toHaveLength(2);
      await until(() => running('t1') === 3);
      expect(raised.limits[0]).toMatchObject({ limit: 3, source: 'runtime', waiting: 1 });

      // removed: the spec's 2 holds from the next start, so the last waits until two have ended
      const removed = await limits('DELETE', 't1');
      expect(removed.limits[0]).toMatchObject({ limit: 2, specLimit: 2, source: 'spec' });
      expect(removed.handedOn).toEqual([]);
      const first = runs.find((r) => r.tenant === 't1')?.id ?? '';
      released.add(first);
      await new Promise((r) => setTimeout(r, 1500));
      expect(running('t1')).toBe(2); // 3 ran, 1 ended, still 2 = the spec's limit: the last still waits
      for (const id of [...ids, ...others]) released.add(id);
      await until(async () =>
        (await Promise.all([...ids, ...others].map((id) => platform.store.get(id)))).every(
          (j) => j?.state === 'succeeded',
        ),
      );
      const t1 = runs.filter((r) => r.tenant === 't1');
      expect(maxOverlap(t1)).toBeLessThanOrEqual(3);
      await until(async () => {
        const key = (await fetch(`${platform.url}/types/tiered-sync/keys/t1`).then((r) => r.json())) as {
          limits: KeyLimit[];
        };
        return key.limits[0]?.running.length === 0 && key.limits[0]?.waiting === 0;
      }, 10_000);
    } finally {
      for (const run of runs) released.add(run.id);
      await platform.stop();
    }
  }, 120_000);
});
