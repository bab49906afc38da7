/** Steps the flow-control race tests share (test/unit/flow-*.test.ts). */
import { expect } from 'vitest';
import { sqsEvent } from '../support/fakes';
import type { heldHandlers } from '../support/held-handlers';
import { type harness, messageFor } from './worker-harness';

const tick = () => new Promise((r) => setTimeout(r, 1));

/**
 * The end of a cancelled holder's story: while its cancelled attempt still runs, a resend of
 * `next` does not start beside it; once its handler stops, its worker gives the slot back and
 * hands it to `next`, which then runs alone; at the end the key has no holder and nobody waiting.
 */
export async function nextRunsAloneOnceHolderStops(input: {
  h: ReturnType<typeof harness>;
  g: ReturnType<typeof heldHandlers>;
  /** The holder's delivery, still running its handler. */
  holderDone: Promise<unknown>;
  holder: string;
  next: string;
  slot: { scope: string; key: string };
}): Promise<void> {
  const { h, g, holder, next, slot } = input;
  const early = h.worker(sqsEvent(messageFor(next, { messageId: `m-${next}-again` })));
  for (let i = 0; i < 50; i++) await tick();
  expect(g.peak).toBe(1);
  g.release(holder);
  await input.holderDone;
  await early;
  expect(h.queue.sent.map((s) => s.message.id)).toEqual([next]);
  const done = h.worker(sqsEvent(messageFor(next, { messageId: `m-${next}-wake` })));
  await g.until(next);
  g.release(next);
  await done;
  expect(g.peak).toBe(1);
  expect(h.store.peek(next)?.state).toBe('succeeded');
  expect(await h.flow.state(slot)).toMatchObject({ holders: [], waiting: 0 });
}
