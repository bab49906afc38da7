/**
 * A stored signal always wakes its job (issue 24, item 4): when the wake that follows a
 * signal's inbox write is lost (the API died after the write, the wake write failed, the
 * message's send failed and no client sent the signal again), or the worker that suspended the
 * job never looked at its inbox again, the supervisor resumes the job within its bound
 * (`SIGNAL_LOOK_MS` after the signal, plus a pass), not at the wait's deadline (366 days by
 * default). On the in-memory fakes; test/integration/signal-wake.test.ts does the same on
 * DynamoDB Local and the local SQS.
 */
import { describe, expect, it } from 'vitest';
import { SIGNAL_LOOK_MS } from '../../shared/core/due';
import { incarnationOf } from '../../shared/core/table';
import { createLogger } from '../../shared/logger';
import { runSupervisorOnce } from '../../shared/supervisor/run';
import { FakeDueIndex } from '../support/due-index-fake';
import { testConfig } from '../support/fakes';
import { FakeScheduleStore } from '../support/scheduling-fakes';
import { echoJob, harness, redelivery, signalsOf, T0 } from './worker-harness';

const MIN = 60_000;
/** The supervisor's bound for a signal whose wake was lost: its look, 10 minutes on, and a pass. */
const BOUND_MS = 11 * MIN;
const DEADLINE = T0 + 366 * 86_400_000;

/** A job that waits for `paid` (the default timeout, 366 days), the API, and the supervisor, on fakes. */
function world() {
  const h = harness({
    run: async (_p, ctx) => ({ got: await ctx.waitForSignal('paid') }),
    withScheduler: true,
  });
  const log = createLogger({ level: 'silent' });
  const config = testConfig(['echo']);
  const api = signalsOf(h, log);
  const index = new FakeDueIndex(h.store, h.journal);
  const schedules = new FakeScheduleStore();
  const supervise = () =>
    runSupervisorOnce(
      { config, index, jobs: h.store, schedules, queue: h.queue, scheduler: h.scheduler, log },
      h.clock.now(),
    );
  /** Messages sent for `id` so far. */
  const sentFor = (id: string) => h.queue.sent.filter((s) => s.message.id === id).length;
  /** Brings each message sent for `id` since `from` (a count of `sentFor`) to a worker, as SQS would. */
  const deliver = async (id: string, from: number) => {
    for (let i = from; i < sentFor(id); i++) await h.worker(redelivery(id));
  };
  /**
   * The job started, waits for its signal, and is past the supervisor's creation sweep (which
   * gave it a due entry at its deadline): nothing else brings it back before then.
   */
  const waiting = async (id: string) => {
    h.store.seed(echoJob(id));
    await h.worker(redelivery(id));
    expect(h.store.peek(id)).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    h.clock.advance(30 * MIN);
    await supervise();
    expect(h.store.due(id)?.dueAt).toBeGreaterThan(DEADLINE);
  };
  return { h, api, supervise, sentFor, deliver, waiting };
}

describe('a stored signal whose wake is lost still resumes its job within the supervisor’s bound', () => {
  it('the wake write fails after the inbox write (no client retry): the supervisor wakes the job and sends its message', async () => {
    const w = world();
    await w.waiting('lw-1');
    w.h.store.failNext('wake', new Error('ProvisionedThroughputExceededException'));
    await expect(w.api.send('lw-1', 'paid', { payload: { amount: 7 } })).rejects.toThrow(/Throughput/);
    expect(w.h.store.peek('lw-1')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    const sent = w.sentFor('lw-1');

    w.h.clock.advance(BOUND_MS);
    const report = await w.supervise();
    expect(w.sentFor('lw-1')).toBe(sent + 1);
    expect(report.failed).toBe(0);
    await w.deliver('lw-1', sent);
    expect(w.h.store.peek('lw-1')).toMatchObject({ state: 'succeeded', result: { got: { amount: 7 } } });
    expect(w.h.clock.now()).toBeLessThan(DEADLINE);
  });

  it('the API dies between the inbox write and the wake: the same', async () => {
    const w = world();
    await w.waiting('lw-2');
    // the wake never comes back: the API's Lambda was killed there
    w.h.store.wake = () => new Promise(() => {});
    void w.api.send('lw-2', 'paid', { payload: 2 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(
      await w.h.journal.signal({
        jobId: 'lw-2',
        incarnation: incarnationOf(w.h.store.peek('lw-2')?.createdAt ?? ''),
        name: 'paid',
      }),
    ).toMatchObject({ payload: 2 });
    const sent = w.sentFor('lw-2');
    // a new API instance (and the supervisor) wake as usual
    w.h.store.wake = Object.getPrototypeOf(w.h.store).wake.bind(w.h.store);

    w.h.clock.advance(BOUND_MS);
    await w.supervise();
    await w.deliver('lw-2', sent);
    expect(w.h.store.peek('lw-2')).toMatchObject({ state: 'succeeded', result: { got: 2 } });
  });

  it('the wake applies but the message’s send fails (503, never sent again): the supervisor sends it', async () => {
    const w = world();
    await w.waiting('lw-3');
    w.h.queue.failNext('send', new Error('SQS unavailable'));
    await expect(w.api.send('lw-3', 'paid', { payload: 3 })).rejects.toMatchObject({ name: 'DependencyError' });
    expect(w.h.store.peek('lw-3')).toMatchObject({ state: 'waiting', runAt: new Date(w.h.clock.now()).toISOString() });
    const sent = w.sentFor('lw-3');

    w.h.clock.advance(BOUND_MS);
    await w.supervise();
    expect(w.sentFor('lw-3')).toBe(sent + 1);
    await w.deliver('lw-3', sent);
    expect(w.h.store.peek('lw-3')).toMatchObject({ state: 'succeeded', result: { got: 3 } });
  });

  it('a signal sent twice whose wakes both fail is woken and sent once, and later passes send nothing more', async () => {
    const w = world();
    await w.waiting('lw-4');
    w.h.store.failNext('wake', new Error('InternalServerError'), 2);
    await expect(w.api.send('lw-4', 'paid', { payload: 4 })).rejects.toThrow();
    await expect(w.api.send('lw-4', 'paid', { payload: 4 })).rejects.toThrow();
    const sent = w.sentFor('lw-4');

    w.h.clock.advance(BOUND_MS);
    await w.supervise();
    // passes that read the same minute again (the safety window) do not wake or send again
    for (let i = 0; i < 6; i++) {
      w.h.clock.advance(MIN);
      await w.supervise();
    }
    expect(w.sentFor('lw-4')).toBe(sent + 1);
    await w.deliver('lw-4', sent);
    expect(w.h.store.peek('lw-4')).toMatchObject({ state: 'succeeded', result: { got: 4 } });
  });

  it('a woken job whose message is lost again is sent again by its own due entry, 10 minutes after the wake', async () => {
    const w = world();
    await w.waiting('lw-5');
    w.h.store.failNext('wake', new Error('InternalServerError'));
    await expect(w.api.send('lw-5', 'paid', { payload: 5 })).rejects.toThrow();
    const sent = w.sentFor('lw-5');
    w.h.clock.advance(BOUND_MS);
    await w.supervise();
    expect(w.sentFor('lw-5')).toBe(sent + 1); // this message is lost: nobody delivers it
    w.h.clock.advance(5 * MIN);
    await w.supervise();
    expect(w.sentFor('lw-5')).toBe(sent + 1);
    w.h.clock.advance(5 * MIN);
    await w.supervise();
    expect(w.sentFor('lw-5')).toBe(sent + 2);
    await w.h.worker(redelivery('lw-5'));
    expect(w.h.store.peek('lw-5')).toMatchObject({ state: 'succeeded', result: { got: 5 } });
  });

  it('a signal sent before the job waits is found by the wait; the supervisor’s look then sends nothing', async () => {
    const w = world();
    w.h.store.seed(echoJob('lw-6'));
    expect(await w.api.send('lw-6', 'paid', { payload: 6 })).toMatchObject({ receipt: { resumed: false } });
    await w.h.worker(redelivery('lw-6'));
    expect(w.h.store.peek('lw-6')).toMatchObject({ state: 'succeeded', result: { got: 6 } });
    const sent = w.sentFor('lw-6');
    w.h.clock.advance(BOUND_MS);
    const report = await w.supervise();
    expect(w.sentFor('lw-6')).toBe(sent);
    expect(report.resent).toEqual([]);
  });

  it('a healthy signal (woken and resumed at once) costs the supervisor no write and no send', async () => {
    const w = world();
    await w.waiting('lw-7');
    const sent = w.sentFor('lw-7');
    expect(await w.api.send('lw-7', 'paid', { payload: 7 })).toMatchObject({ receipt: { resumed: true } });
    await w.deliver('lw-7', sent);
    expect(w.h.store.peek('lw-7')).toMatchObject({ state: 'succeeded' });
    const due = w.h.store.due('lw-7');
    w.h.clock.advance(BOUND_MS);
    const report = await w.supervise();
    expect(w.sentFor('lw-7')).toBe(sent + 1);
    expect(report).toMatchObject({ resent: [], rescheduled: 0, failed: 0 });
    expect(w.h.store.due('lw-7')).toEqual(due);
  });
});

describe('the worker side: a signal that lands between the wait’s inbox read and the suspend write', () => {
  /** Makes the signal arrive (through the API) right after the handler's wait read the inbox. */
  function landsAfterTheRead(w: ReturnType<typeof world>, id: string, payload: unknown) {
    const look = w.h.journal.signal.bind(w.h.journal);
    let reads = 0;
    const receipts: unknown[] = [];
    w.h.journal.signal = async (input) => {
      reads += 1;
      const found = await look(input);
      // the job is running: the API stores the signal, and its wake finds no waiting job
      if (reads === 1) receipts.push((await w.api.send(id, 'paid', { payload })).receipt);
      return found;
    };
    return { receipts, reads: () => reads, restore: () => Object.assign(w.h.journal, { signal: look }) };
  }

  it('is caught by the worker’s look after its suspend write: the job resumes at once', async () => {
    const w = world();
    w.h.store.seed(echoJob('ws-1'));
    const race = landsAfterTheRead(w, 'ws-1', 'late');
    await w.h.worker(redelivery('ws-1'));
    expect(race.receipts).toEqual([expect.objectContaining({ resumed: false })]);
    // the worker looked again after writing `waiting`, found it, woke the job and kept its message
    expect(race.reads()).toBe(2);
    expect(w.h.store.peek('ws-1')).toMatchObject({ state: 'waiting', runAt: new Date(T0).toISOString() });
    expect(w.h.queue.visibility.at(-1)?.seconds).toBe(0);
    await w.h.worker(redelivery('ws-1'));
    expect(w.h.store.peek('ws-1')).toMatchObject({ state: 'succeeded', result: { got: 'late' } });
  });

  it('when that look fails and its message does not come back, the supervisor wakes the job within its bound', async () => {
    const w = world();
    w.h.store.seed(echoJob('ws-2'));
    const race = landsAfterTheRead(w, 'ws-2', 'late');
    const look = w.h.journal.signal;
    w.h.journal.signal = async (input) => {
      if (race.reads() >= 1) throw new Error('the worker was killed after its suspend write');
      return look(input);
    };
    w.h.queue.failNext('changeVisibility', new Error('the worker was killed'));
    await w.h.worker(redelivery('ws-2')); // its message is not delivered again
    race.restore();
    expect(w.h.store.peek('ws-2')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    const sent = w.sentFor('ws-2');

    w.h.clock.advance(BOUND_MS);
    await w.supervise();
    await w.deliver('ws-2', sent);
    expect(w.h.store.peek('ws-2')).toMatchObject({ state: 'succeeded', result: { got: 'late' } });
  });
});

describe('a signal of an earlier job of the same id', () => {
  it('wakes no later job that took the id: the supervisor’s look at its inbox entry finds another incarnation', async () => {
    const w = world();
    await w.waiting('lw-r');
    const job = w.h.store.peek('lw-r');
    if (!job) throw new Error('no job');
    // the inbox item of the id's earlier job (created a year before), due for its look now
    const earlier = incarnationOf(new Date(Date.parse(job.createdAt) - 365 * 86_400_000).toISOString());
    await w.h.journal.deliver({
      jobId: 'lw-r',
      incarnation: earlier,
      name: 'paid',
      signal: { payload: 'old', payloadHash: 'h-old', at: new Date(w.h.clock.now()).toISOString() },
      expiresAt: 0,
      dueAt: w.h.clock.now() + SIGNAL_LOOK_MS,
    });
    const sent = w.sentFor('lw-r');

    w.h.clock.advance(BOUND_MS);
    const report = await w.supervise();
    expect(report.woken).toEqual([]);
    expect(w.sentFor('lw-r')).toBe(sent);
    expect(w.h.store.peek('lw-r')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
  });
});
