/**
 * A new job takes its place at enqueue (shared/api/enqueue/line.ts): the production API and
 * workers on the in-memory ports. A job of a ranked line (a limit shared fairly, or a type with
 * priorities) holds a free place before its message is sent; while every place is held, it is
 * sent no message: it waits in its line, and the holder that frees a place sends it its message.
 * A type that is not eligible is sent as before.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../shared/client';
import { ManualClock } from '../../shared/core/clock';
import { fairSpec as fair, fairPlatform, T0, throttledSpec as throttled } from '../support/enqueue-line';

const platform = fairPlatform();

/** A handler whose first job holds its place until `letGo()`; the order jobs started in. */
function holding() {
  const started: string[] = [];
  let letGo = () => {};
  const held = new Promise<void>((resolve) => {
    letGo = resolve;
  });
  const run = (async (p: { i: number }, ctx: { jobId: string }) => {
    started.push(ctx.jobId);
    if (p.i === 0) await held;
    return { ok: true };
  }) as never;
  return { started, run, letGo: () => letGo() };
}

const clock = () => new ManualClock(T0);

async function start(spec: typeof fair, run: never, at = clock()) {
  return (await platform.start({ spec, run, clock: at })).p;
}

const until = async (what: () => boolean) => {
  for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(what()).toBe(true);
};

describe('a new job takes its place at enqueue, or joins its line while every place is held', () => {
  it('is sent no message while it waits, and starts when handed a place, by the fair rule', async () => {
    const h = holding();
    const at = clock();
    const p = await start(fair, h.run, at);
    const orrery = createClient({ url: p.url, jobs: { 'tenant-fair': fair } });
    const sentFor = (id: string) => p.ports.queue.sent.filter((s) => s.message.id === id).length;
    await orrery.enqueue('tenant-fair', { t: 'a', i: 0 }, { id: 'a0' });
    await until(() => h.started.includes('a0'));
    for (const [id, t] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
    ] as const) {
      at.advance(1);
      const { job } = await orrery.enqueue('tenant-fair', { t, i: Number(id.slice(1)) }, { id });
      expect(job).toMatchObject({ state: 'queued', waitingFor: { kind: 'concurrency', key: '*' } });
      expect(sentFor(id)).toBe(0);
    }
    const slot = { scope: 'tenant-fair#0', key: '*' };
    expect(await p.ports.flow.state(slot)).toMatchObject({ waiting: 3, waitingByFairKey: { a: 2, b: 1 } });
    // a take per enqueue (a0's held its place; refused for the three that joined), a0's attempt
    // taking its place over, and the three joins: what joining on delivery would have written
    expect(p.ports.flow.writes).toMatchObject({ acquire: 5, join: 3 });
    expect((await p.ports.flow.state(slot)).holders).toMatchObject([{ jobId: 'a0', token: 1, fair: 'a' }]);

    at.advance(1);
    h.letGo();
    await p.runUntilIdle();
    // a0 ended with a and b running none: a (in line first), then b (a was just handed a place), then a
    expect(h.started).toEqual(['a0', 'a1', 'b1', 'a2']);
    // each was sent one message: the one that started it, once handed its place
    for (const id of ['a1', 'a2', 'b1']) expect(sentFor(id)).toBe(1);
    for (const id of ['a0', 'a1', 'a2', 'b1']) expect((await orrery.get(id)).state).toBe('succeeded');
    expect(await p.ports.flow.state(slot)).toMatchObject({ holders: [], waiting: 0 });
  });

  it('is sent as before when its type has a gate before its slots', async () => {
    const h = holding();
    const p = await start(throttled as never, h.run);
    const orrery = createClient({ url: p.url, jobs: { 'tenant-throttled': throttled } });
    await orrery.enqueue('tenant-throttled', { t: 'a', i: 1 }, { id: 'free' });
    await p.runUntilIdle();
    await orrery.enqueue('tenant-throttled', { t: 'a', i: 0 }, { id: 'holder' });
    await until(() => h.started.includes('holder'));
    const { job } = await orrery.enqueue('tenant-throttled', { t: 'b', i: 2 }, { id: 'behind' });
    expect(job.waitingFor).toBeUndefined();
    expect(p.ports.queue.sent.filter((s) => s.message.id === 'behind')).toHaveLength(1);
    h.letGo();
    await p.runUntilIdle();
    expect(h.started).toEqual(['free', 'holder', 'behind']);
  });
});
