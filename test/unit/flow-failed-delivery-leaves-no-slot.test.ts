/**
 * Two receipts of one job's message (the first one's calls were slow for longer than the queue's
 * visibility timeout, so the message came back): both read the job due for its next attempt. The
 * second claims it, runs it to success, gives its slot back and deletes the message. The first
 * then makes its entry anew (that attempt's token, the place being free), and its delivery
 * fails before its `finish`: the claim is throttled, or the take is applied and its answer lost
 * (a throttled SDK retry). Its message is kept, but that message is gone (the other receipt
 * deleted it): no delivery ever comes back to give the entry back, and a job that ended holds its
 * place for good (seen in the system chaos run, invariant 9, on a limit of 2 per key with nobody
 * left in line).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AcquireInput } from '../../shared/core/flow';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { ThrottledError } from '../../shared/errors';
import { newJob, sqsEvent } from '../support/fakes';
import { heldHandlers } from '../support/held-handlers';
import { harness, messageFor, T0 } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tag: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 2, key: (p) => p.tag }],
});
const slot = { scope: 'echo#0', key: 'k1' };
const tick = () => new Promise((r) => setTimeout(r, 1));

type Fail = 'claim' | 'lost-take';

/** The slow receipt reads the job, waits at its acquire while the other runs the job to success, then fails as `fail` says. */
async function slowReceiptFails(fail: Fail) {
  const g = heldHandlers();
  const h = harness({ spec: spec as JobTypeSpec, run: g.run as never });
  h.store.seed(newJob({ id: 'a', type: 'echo', payload: { n: 1, tag: 'k1' } }, T0));

  // The slow receipt's acquire is held back until the test lets it go.
  const acquire = h.flow.acquire.bind(h.flow);
  let letAcquire = () => {};
  const acquires = new Promise<void>((resolve) => {
    letAcquire = resolve;
  });
  let held = false;
  h.flow.acquire = async (input: AcquireInput) => {
    if (held) return acquire(input);
    held = true;
    await acquires;
    const got = await acquire(input);
    // applied, and its answer lost: the SDK's retry was throttled
    if (fail === 'lost-take')
      throw new ThrottledError('AWS throttled DynamoDB UpdateItem (flow acquire); retry shortly');
    return got;
  };
  const claim = h.store.claim.bind(h.store);
  h.store.claim = async (input) => {
    if (fail === 'claim' && input.messageId === 'm-slow') {
      throw new ThrottledError('AWS throttled DynamoDB UpdateItem (claim); retry shortly');
    }
    return claim(input);
  };

  const slow = h.worker(sqsEvent(messageFor('a', { messageId: 'm-slow' })));
  for (let i = 0; i < 1000 && !held; i++) await tick();
  expect(held).toBe(true);
  // The message's other receipt runs the attempt to its end and gives its slot back.
  const other = h.worker(sqsEvent(messageFor('a')));
  await g.until('a');
  g.release('a');
  await other;
  expect(h.store.peek('a')?.state).toBe('succeeded');
  expect((await h.flow.state(slot)).holders).toEqual([]);

  // The slow receipt now enters anew, and fails before its claim's end.
  letAcquire();
  const response = await slow;
  return { h, response };
}

describe('flow: a delivery that fails after it entered the slot', () => {
  it.each<Fail>(['claim', 'lost-take'])('gives the entry of a job that has ended back (fails at: %s)', async (fail) => {
    const { h, response } = await slowReceiptFails(fail);
    // the message is kept, as before (its next delivery, if any, finds nothing to do)...
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-slow' }]);
    // ...but the job, which ended, holds no place: nothing else would ever give it back
    expect(await h.flow.state(slot)).toMatchObject({ holders: [], waiting: 0 });
  });

  it('keeps the entry it shares with an attempt of its token that runs', async () => {
    const g = heldHandlers();
    const h = harness({ spec: spec as JobTypeSpec, run: g.run as never });
    h.store.seed(newJob({ id: 'a', type: 'echo', payload: { n: 1, tag: 'k1' } }, T0));
    const claim = h.store.claim.bind(h.store);
    let letClaim = () => {};
    const claims = new Promise<void>((resolve) => {
      letClaim = resolve;
    });
    let atClaim = false;
    h.store.claim = async (input) => {
      if (input.messageId !== 'm-slow') return claim(input);
      atClaim = true;
      await claims;
      throw new ThrottledError('AWS throttled DynamoDB UpdateItem (claim); retry shortly');
    };
    // The slow receipt enters (token 1) and is at its claim; the other enters too (the same entry) and runs.
    const slow = h.worker(sqsEvent(messageFor('a', { messageId: 'm-slow' })));
    for (let i = 0; i < 1000 && !atClaim; i++) await tick();
    expect(atClaim).toBe(true);
    const other = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    // The slow receipt's claim fails while the attempt runs: the entry is the running attempt's.
    letClaim();
    expect((await slow).batchItemFailures).toEqual([{ itemIdentifier: 'm-slow' }]);
    expect((await h.flow.state(slot)).holders).toMatchObject([{ jobId: 'a', token: 1 }]);
    g.release('a');
    await other;
    expect((await h.flow.state(slot)).holders).toEqual([]);
  });
});
