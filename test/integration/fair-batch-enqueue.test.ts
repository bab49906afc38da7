/**
 * Batches of a tenant-fair type through the API and the workers on local AWS: the jobs that
 * have to wait at enqueue join their line together (shared/aws/flow-slots/join-many.ts), and
 * every job still runs once, never more than the limit at a time, each tenant's in rank order.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';

const LIMIT = 2;
const spec = defineJobType({
  type: 'batch-fair',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 30_000,
  concurrency: [{ limit: LIMIT, fairBy: (p) => p.tenant }],
});

let aws: LocalAws;
let platform: LocalPlatform;
const lines: { message: string; jobId?: string; at?: string }[] = [];
const runs: { id: string; tenant: string; i: number; start: number; end: number }[] = [];
let running = 0;
let most = 0;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  const run = async (p: { tenant: string; i: number }, ctx: { jobId: string }) => {
    running += 1;
    most = Math.max(most, running);
    const start = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    running -= 1;
    runs.push({ id: ctx.jobId, tenant: p.tenant, i: p.i, start, end: Date.now() });
    return { ok: true };
  };
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('fair-batch'),
    jobs: [{ spec, run }] as unknown as JobDefinition[],
    logger: createLogger({ level: 'info', sink: (l) => lines.push(JSON.parse(l)) }),
    runner: { batchSize: 10, maxConcurrency: 5, waitTimeSeconds: 1 },
  });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

describe('batches of a tenant-fair type on local AWS', () => {
  it('60 jobs in two batches: each runs once, at most 2 at a time, and those that waited joined at enqueue', async () => {
    const batch = (tenant: string) => ({
      jobs: Array.from({ length: 30 }, (_, i) => ({
        id: `${tenant}-${i}`,
        type: spec.type,
        payload: { tenant, i },
      })),
    });
    const sent = await Promise.all(
      ['a', 'b'].map((t) =>
        fetch(`${platform.url}/jobs/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(batch(t)),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { results: { status: string }[] } })),
      ),
    );
    for (const s of sent) {
      expect(s.status).toBeLessThan(300);
      expect(s.body.results.filter((r) => r.status === 'error')).toEqual([]);
    }
    const deadline = Date.now() + 90_000;
    while (runs.length < 60 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(new Set(runs.map((r) => r.id)).size).toBe(60);
    expect(runs).toHaveLength(60);
    expect(most).toBeLessThanOrEqual(LIMIT);
    // each tenant's jobs start in the order they were ranked (enqueued, equal priority)
    for (const t of ['a', 'b']) {
      const order = runs.filter((r) => r.tenant === t).sort((x, y) => x.start - y.start);
      const waited = order.slice(LIMIT).map((r) => r.i);
      expect(waited).toEqual([...waited].sort((x, y) => x - y));
    }
    // nearly all of them waited in line from the enqueue, with no message until handed a place
    const joinedAtEnqueue = lines.filter((l) => l.message === 'waiting for a concurrency slot' && l.at === 'enqueue');
    expect(joinedAtEnqueue.length).toBeGreaterThanOrEqual(50);
  });
});
