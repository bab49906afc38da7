/**
 * A claim refused because the refusal itself ends the job (its last attempt died: `exhausted`;
 * it was not started by its `dispatchBy`: `past-deadline`) gives back the concurrency slots the
 * job still holds, and hands them on: the job in line behind it is sent its message. The gates
 * take nothing for such a job (the claim rule says it would not start), so what it holds was
 * taken by an earlier delivery.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jobSlots } from '../../shared/core/job-slots';
import { defineJobType } from '../../shared/core/job-type';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import { echoJob, harness, redelivery, T0 } from './worker-harness';

/** `echo` with one slot for the whole type. */
const oneAtATime = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 60_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1 }],
});
const iso = (ms: number) => new Date(ms).toISOString();
const sentTo = (h: ReturnType<typeof harness>) => h.queue.sent.map((s) => (s.message as { id: string }).id);

describe('a claim refusal that ends the job gives back its slots', () => {
  it('exhausted: the dead last attempt holds the slot; the job fails, and the next in line is sent its message', async () => {
    const h = harness({ spec: oneAtATime });
    const x = echoJob('x', {
      state: 'running',
      attempts: 3,
      leaseToken: 3,
      leaseOwner: 'dead',
      leaseExpiresAt: T0 - MAX_CLOCK_SKEW_MS - 60_000,
      startedAt: iso(T0 - 120_000),
      leaseMessage: 'm-old',
    });
    h.store.seed(x);
    const [slot] = jobSlots(oneAtATime, x);
    if (!slot) throw new Error('no slot');
    await h.flow.acquire({ slot, jobId: 'x', type: 'echo', now: T0 - 120_000, token: 3 });
    h.store.seed(echoJob('y'));
    await h.worker(redelivery('y')); // waits in line behind x
    expect((await h.flow.state(slot)).waiting).toBe(1);

    await h.worker(redelivery('x'));

    expect(h.store.peek('x')?.state).toBe('failed');
    const state = await h.flow.state(slot);
    expect(state.holders.map((holder) => holder.jobId)).toEqual(['y']);
    expect(state.waiting).toBe(0);
    expect(sentTo(h)).toContain('y');
  });

  it('past-deadline: a job handed the slot after its dispatchBy expires, and the slot goes on', async () => {
    let free = () => {};
    const held = new Promise<void>((resolve) => {
      free = resolve;
    });
    const h = harness({
      spec: oneAtATime,
      run: async (payload, ctx) => {
        if (ctx.jobId === 'a') await held;
        return payload;
      },
    });
    h.store.seed(echoJob('a'));
    h.store.seed(echoJob('b', { dispatchBy: iso(T0 + 5_000) }));
    h.store.seed(echoJob('c'));
    const running = h.worker(redelivery('a'));
    for (let i = 0; i < 50 && h.store.peek('a')?.state !== 'running'; i++) await new Promise((r) => setTimeout(r, 2));
    await h.worker(redelivery('b')); // in line behind a
    await h.worker(redelivery('c')); // in line behind b
    h.clock.advance(10_000); // b's dispatchBy passes while it waits
    free();
    await running; // a gives its slot to b, and sends b its message

    await h.worker(redelivery('b'));

    expect(h.store.peek('b')?.state).toBe('expired');
    const [slot] = jobSlots(oneAtATime, echoJob('c'));
    if (!slot) throw new Error('no slot');
    const state = await h.flow.state(slot);
    expect(state.holders.map((holder) => holder.jobId)).toEqual(['c']);
    expect(state.waiting).toBe(0);
    expect(sentTo(h)).toContain('c');
  });
});
