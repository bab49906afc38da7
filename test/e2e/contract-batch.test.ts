import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchResponseSchema } from '../../shared/api/schemas';
import { call, getJob, isLocal, uniqueId, waitForJob } from './contract-helpers';
import { type E2ETarget, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

describe('POST /jobs/batch', () => {
  it('accepts, replays and rejects items independently, and never hides which were accepted', async () => {
    const dup = uniqueId('batch-dup');
    const fresh = uniqueId('batch-new');
    const before = isLocal ? await target.footprint() : undefined;
    const body = await call(target, 'POST', '/jobs/batch', 200, batchResponseSchema, {
      jobs: [
        { id: dup, type: 'echo', payload: { n: 1 } },
        { type: 'echo', payload: { n: 2 } },
        { id: dup, type: 'echo', payload: { n: 1 } }, // same id and payload: a replay
        { id: dup, type: 'echo', payload: { n: 3 } }, // same id, other payload: a conflict
        { type: 'flaky', payload: { failTimes: 'x' } }, // fails the type's schema
        { type: 'nope', payload: {} }, // unknown type
        { id: '../etc/passwd', type: 'echo', payload: {} }, // bad id
        { id: fresh, type: 'sleep', payload: { ms: 1 }, urgency: 1 }, // unknown field
        { id: fresh, type: 'sleep', payload: { ms: 1 } },
        42,
      ],
    });
    expect(body.results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const summary = body.results.map((r) => (r.status === 'error' ? `error:${r.error.code}` : r.status));
    expect(summary).toEqual([
      'created',
      'created',
      'existing',
      'error:id_conflict',
      'error:invalid_payload',
      'error:unknown_type',
      'error:validation_failed',
      'error:validation_failed',
      'created',
      'error:validation_failed',
    ]);
    const invalidPayload = body.results[4];
    expect(invalidPayload?.status === 'error' && invalidPayload.error.issues?.map((i) => i.path)).toEqual([
      'payload.failTimes',
    ]);
    const unknownField = body.results[7];
    expect(unknownField?.status === 'error' && unknownField.error.issues?.map((i) => i.path)).toEqual(['urgency']);

    const created = body.results.flatMap((r) => (r.status === 'created' ? [r.job] : []));
    expect(created.map((j) => j.state)).toEqual(['queued', 'queued', 'queued']);
    for (const job of created) {
      const done = await waitForJob(target, job.id, ['succeeded']);
      expect(done.createdAt).toBe(job.createdAt);
    }
    expect((await getJob(target, dup)).result).toEqual({ n: 1 });
    if (before) {
      // Exactly the three created jobs were written; the rejected items wrote nothing.
      const after = await target.footprint();
      expect(after.items - before.items).toBe(3);
    }
  });

  it('is also served as POST /jobs:batch, and takes 100 jobs in one request', async () => {
    const jobs = Array.from({ length: 100 }, (_, i) => ({ id: uniqueId(`b100-${i}`), type: 'echo', payload: { i } }));
    const body = await call(target, 'POST', '/jobs:batch', 200, batchResponseSchema, { jobs });
    expect(body.results).toHaveLength(100);
    expect(body.results.every((r, i) => r.status === 'created' && r.index === i && r.job.id === jobs[i]?.id)).toBe(
      true,
    );
    const again = await call(target, 'POST', '/jobs/batch', 200, batchResponseSchema, { jobs });
    expect(again.results.every((r) => r.status === 'existing')).toBe(true);
  });
});
