/**
 * Priorities on local AWS (DynamoDB Local, the SQS emulator) through the real SDK and the API: a
 * type with a limit of 2 and priorities. Two long jobs hold its places while low-priority jobs
 * fill its line and high-priority ones join it: every high one starts before every low one that
 * waited with it, the low ones keep their order, the limit holds throughout, and the line drains
 * to nothing (no holder, no count left).
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

const LOW = 24;
const HIGH = 6;
type Run = { id: string; start: number; end: number };

/** Polls `what` until it holds (at most 90_000 ms unless given). */
const until = (what: () => Promise<boolean> | boolean, ms = 90_000) => untilWithin(what, ms);

describe('priorities on local AWS', () => {
  it(`starts ${HIGH} high-priority jobs before the low-priority ones waiting with them, within the limit`, async () => {
    const runs: Run[] = [];
    const spec = defineJobType({
      type: 'ranked-sync',
      payload: z.object({ ms: z.number() }),
      concurrency: [{ limit: 2 }],
      priority: { default: 0, agingSeconds: 3600 },
    });
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('prio'),
      jobs: [
        {
          spec,
          run: (async (p: { ms: number }, ctx: { jobId: string }) => {
            const run: Run = { id: ctx.jobId, start: Date.now(), end: 0 };
            runs.push(run);
            await new Promise((r) => setTimeout(r, p.ms));
            run.end = Date.now();
            return { ok: true };
          }) as never,
        },
      ],
      logger: createLogger({ level: 'error' }),
      leaseMs: 5000,
    });
    try {
      const low = Array.from({ length: LOW }, (_, i) => `low-${String(i).padStart(2, '0')}`);
      // the first two hold the two places a while, so the line forms behind them
      for (const [i, id] of low.entries()) {
        await enqueueNew(platform.url, { id, type: 'ranked-sync', payload: { ms: i < 2 ? 4000 : 150 } });
      }
      const high = Array.from({ length: HIGH }, (_, i) => `high-${i}`);
      for (const id of high) {
        await enqueueNew(platform.url, { id, type: 'ranked-sync', payload: { ms: 150 }, priority: 9 });
      }
      // every one of them waits in the line (its delivery joined it) while the first two still run
      const waiting = [...low.slice(2), ...high];
      await until(async () =>
        (await Promise.all(waiting.map((id) => platform.store.get(id)))).every((j) => j?.waitingFor !== undefined),
      );
      const joined = Date.now();
      const all = [...low, ...high];
      await until(async () =>
        (await Promise.all(all.map((id) => platform.store.get(id)))).every((j) => j?.state === 'succeeded'),
      );
      const startOf = (id: string) => Math.min(...runs.filter((r) => r.id === id).map((r) => r.start));
      const endOf = (id: string) => Math.max(...runs.filter((r) => r.id === id).map((r) => r.end));
      // the line was whole before a place came free: nothing was handed on before the high ones joined
      expect(Math.min(endOf('low-00'), endOf('low-01'))).toBeGreaterThan(joined);
      // every high job starts before every low job that waited with it
      const lastHigh = Math.max(...high.map(startOf));
      for (const l of low.slice(2)) expect(startOf(l), `${l} after every high job`).toBeGreaterThan(lastHigh);
      // and the low ones in their own order (one priority: the oldest first), but for the two
      // places handed on at once, whose messages may start them in either order
      const lows = low.slice(2);
      for (const [i, id] of lows.entries()) {
        const passedBy = lows.slice(i + 1).filter((later) => startOf(later) < startOf(id));
        expect(passedBy.length, `${id} passed by ${passedBy.join(', ')}`).toBeLessThanOrEqual(1);
      }
      expect(maxOverlap(runs)).toBeLessThanOrEqual(2);
      const key = await fetch(`${platform.url}/types/ranked-sync/keys/*`).then(
        (r) => r.json() as Promise<{ limits?: { running?: unknown[]; waiting?: number }[] }>,
      );
      await until(async () => {
        const k = await fetch(`${platform.url}/types/ranked-sync/keys/*`).then(
          (r) => r.json() as Promise<{ limits?: { running?: unknown[]; waiting?: number }[] }>,
        );
        return k.limits?.[0]?.running?.length === 0 && k.limits?.[0]?.waiting === 0;
      }, 10_000);
      expect(key.limits?.[0]?.waiting).toBe(0);
    } finally {
      await platform.stop();
    }
  }, 180_000);
});
