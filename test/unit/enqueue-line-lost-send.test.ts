/**
 * Review of "a new job takes its place at enqueue" (shared/api/enqueue/line.ts): a place taken at
 * enqueue (token 0) whose SQS send then fails is held by a job with no message; the jobs that join
 * the line behind it at enqueue have no message either, so no delivery in line ever looks at the
 * holder (`reclaim`): the line stalls until the supervisor re-sends a job (about 11 minutes),
 * where before the change the next job simply took the free place.
 */
import { describe, expect, it } from 'vitest';
import { DependencyError } from '../../shared/errors';
import { fairPlatform, FAIR_SLOT as slot } from '../support/enqueue-line';

const { start } = fairPlatform();

describe('a job that joined its line at enqueue is left behind a place nobody gives back', () => {
  it('a held place whose send failed blocks the jobs that join behind it until the supervisor (docs: two minutes)', async () => {
    const lines: Record<string, unknown>[] = [];
    const { p, orrery, started } = await start({ logs: (line) => lines.push(JSON.parse(line)) });
    // a's place is taken at enqueue (token 0), then its SQS send fails: the API answers 503
    p.ports.queue.failNext('send', new DependencyError('SQS SendMessage failed'));
    await expect(orrery.enqueue('tenant-fair', { t: 'a', i: 0 }, { id: 'a0' })).rejects.toThrow();
    // the place it took at enqueue is given back (and handed on) with the failed send
    expect((await p.ports.flow.state(slot)).holders).toEqual([]);
    // and logged with its slot and holder (nobody waited: nothing was handed on to say so)
    expect(lines.filter((l) => l.message === 'gave back a concurrency slot')).toEqual([
      expect.objectContaining({ scope: slot.scope, key: slot.key, holder: 'a0' }),
    ]);
    // b finds the place free (before the fix, it found a0 holding it, not suspect yet, joined, and
    // was sent nothing)
    await p.advance(1_000);
    const { job } = await orrery.enqueue('tenant-fair', { t: 'b', i: 1 }, { id: 'b1' });
    expect(job.waitingFor).toBeUndefined();
    // Before the change, b was sent, took the free place and ran at once. Docs: "a place taken at
    // enqueue whose message is lost is found as any place handed on and not taken: a job in line
    // sends its message again after two minutes". No job in line has a message: nobody looks.
    for (let minute = 1; minute <= 5; minute++) {
      await p.advance(60_000);
      await p.supervise();
    }
    // b (whose own send never failed) should have run by now, as it did before the change; a0
    // itself is the supervisor's to re-send (ten minutes), as any job whose send failed
    expect(started).toContain('b1');
  });
});
