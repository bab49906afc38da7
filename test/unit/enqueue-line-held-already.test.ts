/**
 * A new job's take at enqueue that finds the job already holding its place. In the chaos run: a
 * slow first enqueue request (its answer lost; the client's retry replayed it, sent the job, and
 * the job ran) takes its place only after the job's own attempt holds one. The take answers
 * `held`, not fresh: the place is the attempt's, not one taken at enqueue. It must not be logged
 * as one (the fair-share check counted it to the tenant for two minutes, while the admitter,
 * rightly, did not), nor given back if the request's send then fails.
 */
import { describe, expect, it } from 'vitest';
import { jobSlots } from '../../shared/core/job-slots';
import { DependencyError } from '../../shared/errors';
import { fairPlatform, fairSpec, FAIR_SLOT as slot } from '../support/enqueue-line';

const { start } = fairPlatform();

describe('a take at enqueue that finds the job already holding its place', () => {
  it('takes none: it logs no place taken at enqueue, and a failed send gives back nothing', async () => {
    const lines: Record<string, unknown>[] = [];
    const { p, orrery } = await start({ logs: (line) => lines.push(JSON.parse(line)) });
    // a replay of the request already ran a0: its attempt holds its place (token 1)
    const [own] = jobSlots(fairSpec, { payload: { t: 'a', i: 0 } });
    await p.ports.flow.acquire({
      slot: own as NonNullable<typeof own>,
      jobId: 'a0',
      type: 'tenant-fair',
      now: 0,
      token: 1,
    });
    // the first request, slow, creates a0 and takes its place only now; its send then fails
    p.ports.queue.failNext('send', new DependencyError('SQS SendMessage failed'));
    await expect(orrery.enqueue('tenant-fair', { t: 'a', i: 0 }, { id: 'a0' })).rejects.toThrow();
    expect(lines.filter((l) => l.message === 'took a place at enqueue')).toEqual([]);
    // the attempt's place stays the attempt's
    expect((await p.ports.flow.state(slot)).holders).toMatchObject([{ jobId: 'a0', token: 1 }]);
  });
});
