/**
 * The worker with priorities, on in-memory ports (the fake slots pass the adapter's contract): a
 * job that has to wait joins its slot's ranked line, a freed place goes to the best-ranked job
 * (higher priority first, the oldest first within one), and a job keeps its place when its
 * message comes again. The starvation bound is checked on a stream of higher-priority jobs.
 */
import { describe, expect, it } from 'vitest';
import { jobRank, passWindowMs } from '../../shared/core/priority';
import { sqsEvent } from '../support/fakes';
import { echoJob, gated, harness, messageFor, rankedSpec, T0 } from './worker-harness';

const iso = (ms: number) => new Date(ms).toISOString();
const job = (id: string, priority: number, runAt = T0) => echoJob(id, { priority, runAt: iso(runAt), flowKeys: ['_'] });

describe('worker: priorities', () => {
  it('waits in the ranked line under its rank, and hands the freed place to the highest priority, then the oldest', async () => {
    const g = gated();
    const h = harness({ spec: rankedSpec, run: g.run as never });
    h.store.seed(job('running', 0));
    const first = h.worker(sqsEvent(messageFor('running')));
    await g.until('running');
    // four jobs come while it runs: two of priority 0 (the older first), one of 5, one of 2
    const waiting = [job('low-old', 0, T0 - 2_000), job('low-new', 0, T0), job('high', 5, T0), job('mid', 2, T0)];
    for (const j of waiting) {
      h.store.seed(j);
      expect(await h.worker(sqsEvent(messageFor(j.id)))).toEqual({ batchItemFailures: [] });
      expect(h.store.peek(j.id)?.waitingFor).toMatchObject({
        kind: 'concurrency',
        limit: 0,
        key: '_',
        rank: jobRank({ agingSeconds: 30 }, j),
      });
      expect(h.store.peek(j.id)?.waitingFor).not.toHaveProperty('ticket');
    }
    expect(await h.flow.state({ scope: 'echo#0', key: '_' })).toMatchObject({ waiting: 4, issued: 0 });

    // each job, as it ends, hands its place on: the order is the ranks'
    let current = 'running';
    let run = first;
    for (const next of ['high', 'mid', 'low-old', 'low-new']) {
      g.release(current);
      await run;
      expect(h.queue.sent.at(-1)?.message).toMatchObject({ id: next });
      run = h.worker(sqsEvent(messageFor(next, { messageId: `m-${next}-2` })));
      await g.until(next);
      current = next;
    }
    g.release(current);
    await run;
    expect(g.started).toEqual(['running', 'high', 'mid', 'low-old', 'low-new']);
    expect(await h.flow.state({ scope: 'echo#0', key: '_' })).toMatchObject({ holders: [], waiting: 0 });
    // a wait costs one join (a transaction of two items in the adapter), and its admission one more
    expect(h.flow.writes).toMatchObject({ join: 4, 'admit-ranked': 4 });
  });

  it('keeps a waiting job in its place when its message comes again: no second entry, no second mark', async () => {
    const g = gated();
    const h = harness({ spec: rankedSpec, run: g.run as never });
    h.store.seed(job('a', 0));
    h.store.seed(job('b', 3));
    const running = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('b')));
    const marks = h.store.calls.filter((c) => c.method === 'markWaiting').length;
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-again' })));
    expect(h.flow.writes.join).toBe(1);
    expect(h.store.calls.filter((c) => c.method === 'markWaiting').length).toBe(marks);
    expect(await h.flow.state({ scope: 'echo#0', key: '_' })).toMatchObject({ waiting: 1 });
    g.release('a');
    await running;
  });

  it('bounds the wait: a job of priority 0 is passed only by jobs due by the end of its pass window, however many come', async () => {
    const g = gated();
    const h = harness({ spec: rankedSpec, run: g.run as never });
    h.store.seed(job('holder', 0));
    const first = h.worker(sqsEvent(messageFor('holder')));
    await g.until('holder');
    // the low job waits from T0; priority-10 jobs keep coming, one every 20 s for 10 minutes
    h.store.seed(job('low', 0, T0));
    await h.worker(sqsEvent(messageFor('low')));
    const window = passWindowMs(0, 30); // 300 s
    const highs: { id: string; dueAt: number }[] = [];
    for (let t = 20_000; t <= 600_000; t += 20_000) {
      const id = `high-${t / 1000}`;
      h.clock.set(T0 + t);
      h.store.seed(job(id, 10, T0 + t));
      await h.worker(sqsEvent(messageFor(id)));
      highs.push({ id, dueAt: T0 + t });
    }
    // serve the line to its end, one place at a time
    let current = 'holder';
    let run = first;
    for (;;) {
      g.release(current);
      await run;
      const next = h.queue.sent.at(-1)?.message.id;
      if (!next || g.started.includes(next)) break;
      run = h.worker(sqsEvent(messageFor(next, { messageId: `m-${next}-run` })));
      await g.until(next);
      current = next;
    }
    const passedBy = g.started.slice(1, g.started.indexOf('low'));
    // every job served before it was due within the window; every one due later came after it
    expect(passedBy.length).toBeGreaterThan(0);
    for (const id of passedBy) {
      expect(highs.find((x) => x.id === id)?.dueAt).toBeLessThanOrEqual(T0 + window);
    }
    // (one due exactly at the window's end ties on rank, and goes first by its id: "high-300" < "low")
    expect(passedBy).toEqual(highs.filter((x) => x.dueAt <= T0 + window).map((x) => x.id));
    expect(g.started).toHaveLength(2 + highs.length);
  });
});
