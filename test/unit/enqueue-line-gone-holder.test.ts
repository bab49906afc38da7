/**
 * Review of "a new job takes its place at enqueue" (shared/api/enqueue/line.ts): a holder whose
 * job has ended but whose release failed (lost answer) is not suspect by time for longer than any
 * attempt (token > 0). A job that joins at enqueue has no message, so the enqueue itself must do
 * what a delivery first in line does: read the holders and free that place (`reclaim`).
 */
import { describe, expect, it } from 'vitest';
import { fairPlatform, FAIR_SLOT as slot } from '../support/enqueue-line';

const { start } = fairPlatform();

type Started = Awaited<ReturnType<typeof start>>;

/**
 * a0 runs and succeeds, but giving its place back fails once (a lost DynamoDB answer, a throttle
 * past the retries): its message is kept for its next delivery, and its place stays held.
 */
async function holderLeftBehind(p: Started['p'], orrery: Started['orrery']): Promise<void> {
  let failRelease = true;
  p.ports.flow.hook = (op) => {
    if (op === 'release' && failRelease) throw new Error('connection reset');
  };
  await orrery.enqueue('tenant-fair', { t: 'a', i: 0 }, { id: 'a0' });
  await p.runUntilIdle();
  failRelease = false;
}

describe('a job that joined its line at enqueue is left behind a place nobody gives back', () => {
  it('a holder that finished but whose release failed blocks the jobs that join behind it (no first-in-line reclaim)', async () => {
    // a worker Lambda of 150 s: its message comes back after 15 minutes
    const { p, orrery, started } = await start({ visibilityTimeoutSeconds: 900 });
    // its message comes back 15 minutes on
    await holderLeftBehind(p, orrery);
    expect((await orrery.get('a0')).state).toBe('succeeded');
    expect((await p.ports.flow.state(slot)).holders).toMatchObject([{ jobId: 'a0', token: 1 }]);
    await p.advance(1_000);
    // b joins at enqueue (a0's place is not suspect by time); before the change it was delivered,
    // found itself first in line, read the holders and freed a0's place at once
    await orrery.enqueue('tenant-fair', { t: 'b', i: 1 }, { id: 'b1' });
    // traffic does not help: a0's place (token 1) is not suspect for longer than any attempt, so
    // every new job joins too, and none is delivered to look at the holder
    for (let minute = 1; minute <= 5; minute++) {
      await p.advance(60_000);
      await orrery.enqueue('tenant-fair', { t: 'c', i: minute }, { id: `c${minute}` });
      await p.supervise();
    }
    expect((await p.ports.flow.state(slot)).waiting).toBe(0);
    expect(started.slice(0, 3)).toEqual(['a0', 'b1', 'c1']);
  });

  it('logs the places it hands on under the job that enqueued, as a worker logs them under its own', async () => {
    const lines: { message: string; jobId?: string; to?: string; scope?: string }[] = [];
    const { p, orrery } = await start({ visibilityTimeoutSeconds: 900, logs: (l) => lines.push(JSON.parse(l)) });
    await holderLeftBehind(p, orrery);
    // b1 joins first in line, frees a0's place and hands it on (to itself): the enqueue's lines
    await orrery.enqueue('tenant-fair', { t: 'b', i: 1 }, { id: 'b1' });
    const handedOn = lines.filter((l) => l.message === 'handed a place in line on' && l.to === 'b1');
    expect(handedOn).toEqual([expect.objectContaining({ jobId: 'b1', scope: 'tenant-fair#0' })]);
    expect(lines.filter((l) => l.message === 'freed a concurrency slot its job never gave back')).toEqual([
      expect.objectContaining({ jobId: 'b1', holder: 'a0' }),
    ]);
  });
});
