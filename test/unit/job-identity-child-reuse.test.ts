/**
 * A job id means one job, from the child's side: a parent's registry names its children by id
 * alone, so a parent that outlives one of its children's retention (a long sleep or signal wait,
 * a far-future runAt) must not release a later job that took that child's id.
 */
import { describe, expect, it } from 'vitest';
import { incarnationOf } from '../../shared/core/table';
import { sqsRecord } from '../support/fakes';
import { depsPlatform } from './workflow-deps-harness';

const DAY = 86_400_000;

describe('a reused child id', () => {
  it('is not released by a live parent of the old child (P → C, C cancelled; C reused with X → C)', async () => {
    const p = depsPlatform();
    await p.enqueue('P'); // P stays queued: its message is not delivered (a long wait, a far runAt)
    await p.enqueue('C', ['P']); // registered in P's registry: { child: C, index 0, parents 1 }
    expect(p.store.peek('C')).toMatchObject({ state: 'waiting', pendingParents: 1 });
    await p.control.cancel('C');
    expect(p.store.peek('C')?.state).toBe('cancelled');
    p.clock.advance(31 * DAY); // the old C is past its retention; P still runs

    await p.enqueue('X'); // not run either
    expect((await p.enqueue('C', ['X'])).created).toBe(true); // the id taken again, parent X only
    expect(p.store.peek('C')).toMatchObject({ state: 'waiting', pendingParents: 1 });

    // P runs and ends: its release walks its registry, which names the OLD C
    const mine = p.queue.sent.filter((s) => s.message.id === 'P');
    for (const sent of mine) await p.worker({ Records: [sqsRecord(sent.message, { messageId: 'm-P' })] });
    expect(p.store.peek('P')?.state).toBe('succeeded');
    expect(p.store.peek('X')?.state).toBe('queued');
    // the new C waits for X alone: P's release of its old edge must not count
    expect(p.store.peek('C')).toMatchObject({ state: 'waiting', pendingParents: 1 });
  });

  it('a flow’s registry names each child’s incarnation, fixed before the child is written (a slow write between levels)', async () => {
    const p = depsPlatform();
    // each registry write takes a second: a child written later must still be the job its entry names
    const putChildren = p.graph.putChildren.bind(p.graph);
    p.graph.putChildren = async (input) => {
      await putChildren(input);
      p.clock.advance(1000);
    };
    const node = (id: string, dependsOn?: string[]) => ({
      id,
      type: 'node',
      payload: {},
      ...(dependsOn ? { dependsOn } : {}),
    });
    await p.flows.create({ id: 'f', jobs: [node('A'), node('B', ['A']), node('C', ['A', 'B'])] });
    const incarnation = (id: string) => incarnationOf(p.store.peek(id)?.createdAt ?? '');
    expect(p.graph.registry('A')).toMatchObject([
      { child: 'B', incarnation: incarnation('B') },
      { child: 'C', incarnation: incarnation('C') },
    ]);
    expect(p.graph.registry('B')).toMatchObject([{ child: 'C', incarnation: incarnation('C') }]);
    await p.drain();
    expect(p.runs).toEqual(['A', 'B', 'C']);
  });
});
