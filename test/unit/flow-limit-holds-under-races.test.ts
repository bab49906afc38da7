/**
 * Flow control under races: interleavings in which more than `limit` jobs of one key run at once.
 * Each test failed on the code before its fix (1: a busy duplicate released; 2: a slot entry had
 * no attempt token; 3: only the head of the line handed a free place on) and asserts the invariant.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Slot } from '../../shared/core/flow';
import { defineJobType } from '../../shared/core/job-type';
import { sqsEvent } from '../support/fakes';
import { heldHandlers } from '../support/held-handlers';
import { echoJob, harness, messageFor } from './worker-harness';

const spec = (delayMs: number) =>
  defineJobType({
    type: 'echo',
    payload: z.object({ n: z.number(), tenant: z.string() }),
    timeoutMs: 1000,
    retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs } },
    concurrency: [{ limit: 1, key: (p) => p.tenant }],
  });
const job = (id: string) => echoJob(id, { payload: { n: 1, tenant: 't1' }, flowKeys: ['t1'] });
const tick = () => new Promise((r) => setTimeout(r, 1));
const tracked = (failFirstOf?: string) => heldHandlers(failFirstOf ? { failFirstOf } : {});

describe('flow: limit 1 exceeded', () => {
  it('a duplicate delivery that took the fresh slot, then lost the claim (busy), frees the slot its running twin relies on', async () => {
    const g = tracked();
    const h = harness({ spec: spec(2000), run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));

    // D2 (a duplicate of a's message) takes a's slot first, then stalls before its claim
    let goD2!: () => void;
    const d2Stalled = new Promise<void>((r) => (goD2 = r));
    let d2Acquired = false;
    const acquire = h.flow.acquire.bind(h.flow);
    let calls = 0;
    h.flow.acquire = async (input: Parameters<typeof acquire>[0]) => {
      const out = await acquire(input);
      if (input.jobId === 'a' && calls++ === 0) {
        d2Acquired = true;
        await d2Stalled;
      }
      return out;
    };
    const d2 = h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-dup' })));
    while (!d2Acquired) await tick();
    // D1 finds a's entry (fresh: false), claims and runs a
    const d1 = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    // D2 claims: busy; it took the slot "fresh", so it gives it back, though a runs on it
    goD2();
    await d2;
    // b's message: the slot looks free
    const db = h.worker(sqsEvent(messageFor('b')));
    for (let i = 0; i < 50; i++) await tick();
    const peak = g.peak;
    g.release('a');
    g.release('b');
    await d1;
    await db;
    expect(peak).toBe(1);
  });

  it('a retry due at once is claimed by its next delivery before its previous attempt has given the slot back', async () => {
    const g = tracked('a');
    const h = harness({ spec: spec(0), run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    const slot: Slot = { scope: 'echo#0', key: 't1', limit: 1 };

    // the failed attempt's worker is about to release a's slot; meanwhile the retry's message (delay 0) arrives
    const release = h.flow.release.bind(h.flow);
    let retry: Promise<unknown> | undefined;
    h.flow.release = async (input: { slot: Slot; jobId: string }) => {
      if (input.jobId === 'a' && !retry) {
        retry = h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-retry' })));
        await g.until('a'); // the retry holds "a's" slot (not fresh) and runs
      }
      return release(input);
    };
    await h.worker(sqsEvent(messageFor('a')));
    expect(h.store.peek('a')?.state).toBe('running');
    // the old attempt's late release left the entry alone: it is the running attempt's (token 2)
    expect((await h.flow.state(slot)).holders).toMatchObject([{ jobId: 'a', token: 2 }]);
    const db = h.worker(sqsEvent(messageFor('b')));
    for (let i = 0; i < 50; i++) await tick();
    const peak = g.peak;
    g.release('a');
    g.release('b');
    await retry;
    await db;
    expect(peak).toBe(1);
  });
});

describe('flow: a free slot nobody hands on', () => {
  it('the head ticket belongs to a job cancelled while it waited, and the hand-on was lost: the line stalls for good', async () => {
    const h = harness({ spec: spec(2000) });
    const slot: Slot = { scope: 'echo#0', key: 't1', limit: 1 };
    h.store.seed(echoJob('holder', { payload: { n: 1, tenant: 't1' }, flowKeys: ['t1'], state: 'running' }));
    for (const id of ['w0', 'w1', 'n']) h.store.seed(job(id));
    await h.flow.acquire({ slot, jobId: 'holder', type: 'echo', now: Date.now(), token: 1 });
    await h.worker(sqsEvent(messageFor('w0'))); // ticket 0 (first in line: reclaims, finds the holder running)
    await h.worker(sqsEvent(messageFor('w1'))); // ticket 1
    // w0 is cancelled while it waits (its ticket stays in line)
    h.store.seed({ ...job('w0'), state: 'cancelled' });
    // the holder ends; its worker gives the slot back and dies before admit
    h.store.seed({ ...job('holder'), state: 'succeeded' });
    await h.flow.release({ slot, jobId: 'holder' });
    // nothing sends w0 a message again (cancel does not touch the slots; the supervisor resends only
    // unfinished jobs): the messages that do come are the resends of w1 and a newcomer's
    for (let round = 0; round < 3; round++) {
      await h.worker(sqsEvent(messageFor('w1', { messageId: `m-w1-${round}` }))); // ticket 1, not first: no reclaim
      await h.worker(sqsEvent(messageFor('n', { messageId: `m-n-${round}` }))); // newcomer: a ticket behind, not first
    }
    const state = await h.flow.state(slot);
    expect(state.holders).toEqual([]); // the slot is free...
    // ...yet w1 (and n) are never handed it
    expect(state.waiting).toBe(0);
  });
});
