/**
 * What the worker reads before its claim: one read of the job for a type with any gate (debounce,
 * concurrency, singleton, throttle), however many gates it has.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { sqsEvent } from '../support/fakes';
import { echoJob, harness, messageFor } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 1000,
  debounce: { key: (p) => String(p.n), periodSeconds: 1, maxWaitSeconds: 10 },
  concurrency: [{ limit: 2 }],
});

describe('worker reads before the claim', () => {
  it('reads the job once for a debounced type with a concurrency limit', async () => {
    const h = harness({ spec });
    h.store.seed(echoJob('deb-1', { debounceKey: '1', debounceSeq: 1, debounceWindow: Date.now() }));
    await h.debouncer.open({ scope: 'echo', key: '1', jobId: 'deb-1', now: Date.now() });
    await h.worker(sqsEvent(messageFor('deb-1')));
    const calls = h.store.calls.map((c) => c.method);
    expect(calls.slice(0, calls.indexOf('claim')).filter((m) => m === 'get')).toEqual(['get']);
    expect(h.store.peek('deb-1')?.state).toBe('succeeded');
  });
});
