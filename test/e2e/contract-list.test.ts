import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { batchResponseSchema, jobPageSchema, type jobSummarySchema, jobViewSchema } from '../../shared/api/schemas';
import {
  call,
  callError,
  isLocal,
  type JobPage,
  listAll,
  newestFirst,
  uniqueId,
  waitFor,
  waitForJob,
} from './contract-helpers';
import { type E2ETarget, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

type Summary = z.output<typeof jobSummarySchema>;

/** Enqueues jobs in one batch; returns their summaries as the API answered them. */
async function batch(jobs: unknown[]): Promise<Summary[]> {
  const body = await call(target, 'POST', '/jobs/batch', 200, batchResponseSchema, { jobs });
  return body.results.map((r) => {
    if (r.status !== 'created') throw new Error(`item ${r.index} was ${r.status}: ${JSON.stringify(r)}`);
    return r.job;
  });
}

const ids = (pages: JobPage[]) => pages.flatMap((p) => p.items.map((j) => j.id));

/** Lists until every id of `want` shows (GSIs are eventually consistent in AWS). */
async function listUntil(query: Record<string, string>, want: string[]): Promise<JobPage[]> {
  return waitFor(`GET /jobs?${new URLSearchParams(query)} to show ${want.length} jobs`, async () => {
    const pages = await listAll(target, query);
    const seen = new Set(ids(pages));
    return want.every((id) => seen.has(id)) ? pages : undefined;
  });
}

describe.runIf(isLocal)('GET /types/{type}/latest before any job', () => {
  it('answers 404 job_not_found for a deployed type with no job', async () => {
    await callError(target, 'GET', '/types/sleep/latest', 404, 'job_not_found');
  });
});

describe('GET /jobs', () => {
  it('pages through 45 jobs newest first with limit 20: no duplicates, no gaps', async () => {
    const run = uniqueId('page');
    // Delayed, so they stay queued while listed; two batches, so createdAt differs between them.
    const first = await batch(
      Array.from({ length: 25 }, (_, i) => ({ id: `${run}-a${i}`, type: 'echo', payload: {}, delaySeconds: 900 })),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await batch(
      Array.from({ length: 20 }, (_, i) => ({ id: `${run}-b${i}`, type: 'echo', payload: {}, delaySeconds: 900 })),
    );
    const ours = [...first, ...second];
    const createdAfter = newestFirst(ours).at(-1)?.createdAt ?? '';
    const pages = await listUntil(
      { type: 'echo', createdAfter, limit: '20' },
      ours.map((j) => j.id),
    );

    const listed = ids(pages);
    expect(new Set(listed).size).toBe(listed.length); // no duplicates
    const mine = new Set(ours.map((j) => j.id));
    expect(listed.filter((id) => mine.has(id))).toEqual(newestFirst(ours).map((j) => j.id)); // order, no gaps
    for (const page of pages.slice(0, -1)) expect(page.items).toHaveLength(20);
    if (isLocal) {
      expect(pages.map((p) => p.items.length)).toEqual([20, 20, 5]);
      expect(pages.flatMap((p) => p.items)).toEqual(newestFirst(ours));
    }
  });

  it('lists every deployed type, merged newest first, when no type is given', async () => {
    const run = uniqueId('mix');
    const jobs = await batch([
      { id: `${run}-1`, type: 'echo', payload: {}, delaySeconds: 900 },
      { id: `${run}-2`, type: 'sleep', payload: { ms: 1 }, delaySeconds: 900 },
      { id: `${run}-3`, type: 'flaky', payload: { failTimes: 0 }, delaySeconds: 900 },
    ]);
    const createdAfter = newestFirst(jobs).at(-1)?.createdAt ?? '';
    const pages = await listUntil(
      { createdAfter, limit: '2' },
      jobs.map((j) => j.id),
    );
    const mine = new Set(jobs.map((j) => j.id));
    const listed = pages.flatMap((p) => p.items).filter((j) => mine.has(j.id));
    expect(listed).toEqual(newestFirst(jobs));
    expect(new Set(listed.map((j) => j.type))).toEqual(new Set(['echo', 'sleep', 'flaky']));
  });

  it('filters by type, state, createdAfter (inclusive) and createdBefore (exclusive)', async () => {
    const run = uniqueId('filter');
    const [later] = await batch([
      { id: `${run}-sched`, type: 'echo', payload: {}, runAt: new Date(Date.now() + 2 * 3600_000).toISOString() },
    ]);
    const [queued] = await batch([{ id: `${run}-queued`, type: 'echo', payload: {}, delaySeconds: 900 }]);
    const [done] = await batch([{ id: `${run}-done`, type: 'echo', payload: { ok: true } }]);
    const [failed] = await batch([{ id: `${run}-failed`, type: 'flaky', payload: { failTimes: 5 }, maxAttempts: 1 }]);
    if (!later || !queued || !done || !failed) throw new Error('batch answered fewer jobs');
    await waitForJob(target, done.id, ['succeeded']);
    await waitForJob(target, failed.id, ['failed']);
    const since = newestFirst([later, queued, done, failed]).at(-1)?.createdAt ?? '';

    const only = async (query: Record<string, string>, want: Summary[]) => {
      const expected = newestFirst(want).map((j) => j.id);
      const full = { ...query, createdAfter: query.createdAfter ?? since };
      // GSIs are eventually consistent in AWS: wait until the run's jobs show exactly as expected.
      const listed = await waitFor(`GET /jobs?${new URLSearchParams(full)}`, async () => {
        const items = (await listAll(target, full)).flatMap((p) => p.items);
        const runIds = items.filter((j) => j.id.startsWith(run)).map((j) => j.id);
        return JSON.stringify(runIds) === JSON.stringify(expected) ? items : undefined;
      });
      expect(new Set(listed.map((j) => j.id)).size).toBe(listed.length);
      return listed;
    };
    const scheduled = await only({ type: 'echo', state: 'scheduled' }, [later]);
    expect(scheduled.every((j) => j.state === 'scheduled' && j.type === 'echo')).toBe(true);
    await only({ type: 'echo', state: 'queued' }, [queued]);
    const succeeded = await only({ type: 'echo', state: 'succeeded' }, [done]);
    expect(succeeded.find((j) => j.id === done.id)?.finishedAt).not.toBeNull();
    await only({ type: 'flaky', state: 'failed' }, [failed]);
    await only({ state: 'failed' }, [failed]);
    await only({ type: 'echo' }, [later, queued, done]);

    // createdAfter is inclusive, createdBefore exclusive: [queued.createdAt, done.createdAt)
    const window = await listAll(target, {
      type: 'echo',
      createdAfter: queued.createdAt,
      createdBefore: done.createdAt,
    });
    const inWindow = ids(window).filter((id) => id.startsWith(run));
    const expected = [later, queued, done].filter(
      (j) => j.createdAt >= queued.createdAt && j.createdAt < done.createdAt,
    );
    expect(inWindow).toEqual(newestFirst(expected).map((j) => j.id));
    expect(inWindow).toContain(queued.id);
    expect(inWindow).not.toContain(done.id);
  });

  it('rejects a cursor used with other filters, and a forged one', async () => {
    const { nextCursor: cursor } = await call(target, 'GET', '/jobs?type=echo&limit=1', 200, jobPageSchema);
    expect(cursor).not.toBeNull(); // the tests above created several echo jobs
    await callError(target, 'GET', `/jobs?type=sleep&limit=1&cursor=${cursor}`, 400, 'invalid_cursor');
    const forged = Buffer.from(JSON.stringify({ v: 1, q: { t: 'echo' }, k: 'x', d: {} })).toString('base64url');
    await callError(target, 'GET', `/jobs?type=echo&cursor=${forged}`, 400, 'invalid_cursor');
  });
});

describe('GET /types/{type}/latest', () => {
  it('answers the newest job of the type, in full', async () => {
    const [older] = await batch([
      { id: uniqueId('latest-a'), type: 'flaky', payload: { failTimes: 0 }, delaySeconds: 900 },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [newer] = await batch([
      { id: uniqueId('latest-b'), type: 'flaky', payload: { failTimes: 0 }, delaySeconds: 900 },
    ]);
    if (!older || !newer) throw new Error('batch answered fewer jobs');
    const latest = await waitFor('latest flaky job', async () => {
      const job = await call(target, 'GET', '/types/flaky/latest', 200, jobViewSchema);
      return job.createdAt >= newer.createdAt ? job : undefined;
    });
    expect(latest.type).toBe('flaky');
    if (isLocal) {
      expect(latest.id).toBe(newer.id);
      expect(latest.payload).toEqual({ failTimes: 0 });
    }
  });

  it('answers 404 type_not_found for a type that is not deployed', async () => {
    await callError(target, 'GET', '/types/nope/latest', 404, 'type_not_found');
  });
});
