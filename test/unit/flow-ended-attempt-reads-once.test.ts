/**
 * A job of a limited type whose attempt ran and wrote its end gives its places back without
 * reading the job again: its own write said it no longer runs under that attempt. An attempt
 * whose delivery keeps its message (a retry's backoff, a write that failed, a lost lease) reads
 * the job, to keep the places of another delivery that took the job over.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { DependencyError } from '../../shared/errors';
import { newJob, sqsEvent } from '../support/fakes';
import { harness, messageFor, T0 } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ tag: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tag }],
});
const slot = { scope: 'echo#0', key: 'k1' };

function counted(run: () => Promise<unknown>) {
  const h = harness({ spec: spec as JobTypeSpec, run: run as never });
  h.store.seed(newJob({ id: 'a', type: 'echo', payload: { tag: 'k1' } }, T0));
  const get = h.store.get.bind(h.store);
  const reads: string[] = [];
  h.store.get = async (id) => {
    reads.push(id);
    return get(id);
  };
  return { h, reads };
}

describe('flow: an attempt that wrote its end', () => {
  it('gives its place back with no second read of the job', async () => {
    const { h, reads } = counted(async () => ({ ok: true }));
    const response = await h.worker(sqsEvent(messageFor('a')));
    expect(response.batchItemFailures).toEqual([]);
    expect(h.store.peek('a')?.state).toBe('succeeded');
    expect((await h.flow.state(slot)).holders).toEqual([]);
    // the delivery's one read, before its claim
    expect(reads).toEqual(['a']);
  });

  it('that keeps its message (a retry) reads the job, and gives its place back though that read fails', async () => {
    const { h, reads } = counted(async () => {
      // the read after the attempt fails, after the SDK's retries and on each of the worker's tries
      h.store.failNext('get', new DependencyError('DynamoDB GetItem: socket hang up'), 4);
      throw new Error('boom');
    });
    const response = await h.worker(sqsEvent(messageFor('a')));
    // the message is kept for the retry's backoff
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-a' }]);
    expect(h.store.peek('a')?.state).toBe('retrying');
    expect(reads).toEqual(['a', 'a', 'a', 'a', 'a']);
    expect((await h.flow.state(slot)).holders).toEqual([]);
  });
});
