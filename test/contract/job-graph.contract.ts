/**
 * The contract of the dependency port (`JobGraph`), run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { CHILDREN_CHUNK, type ChildEntry, edgeOutcome, type JobGraph } from '../../shared/core/dependencies';
import type { Job } from '../../shared/core/job';
import type { JobStore } from '../../shared/core/ports';
import type { JobState } from '../../shared/core/states';
import { incarnationOf } from '../../shared/core/table';
import { newJob } from '../support/fakes';

/** One implementation: the graph and the job store on the same table. */
export interface GraphLeg {
  store: JobStore;
  graph: JobGraph;
}

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const TTL = Math.floor(T0 / 1000) + 86_400;
/** The incarnation of a job the contract creates (at T0, unless told). */
const INC0 = () => incarnationOf(new Date(T0).toISOString());

export function jobGraphContract(setup: () => Promise<GraphLeg>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const id = (label: string) => `g-${run}-${label}-${++seq}`;

  async function put(leg: GraphLeg, overrides: Partial<Job> & { state: JobState }): Promise<Job> {
    const job = newJob({ id: id(overrides.state), type: 'echo', ...overrides }, T0);
    const out = await leg.store.create(job);
    expect(out.created).toBe(true);
    return job;
  }
  const waitingChild = (leg: GraphLeg, pending: number, runAt = T0) =>
    put(leg, { state: 'waiting', pendingParents: pending, runAt: new Date(runAt).toISOString() });
  const resolve = edgeOutcome('succeeded', 'fail');
  /** A release of `child`'s edges by a parent `parent` that succeeded (add `index`). */
  const resolvedBy = (parent: string, child: string, now = T0) => ({
    child,
    outcome: resolve,
    parent,
    parentState: 'succeeded' as const,
    now,
    expiresAt: TTL,
  });

  describe('parents item', () => {
    it('keeps a child’s parents and policies; none for a job without parents', async () => {
      const { graph } = await setup();
      const child = id('child');
      await graph.putParents({
        child,
        incarnation: INC0(),
        parents: [
          { id: 'a', policy: 'fail' },
          { id: 'b', policy: 'ignore' },
        ],
        expiresAt: TTL,
      });
      expect(await graph.parents({ child, incarnation: INC0() })).toEqual([
        { id: 'a', policy: 'fail' },
        { id: 'b', policy: 'ignore' },
      ]);
      expect(await graph.parents({ child: id('nobody'), incarnation: INC0() })).toBeUndefined();
    });
  });

  describe('registration', () => {
    it('numbers the children of a live parent 1, 2, …; refuses a finished or missing parent', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'running' });
      expect(await leg.graph.addChild({ parent: parent.id })).toEqual({ slot: 1, incarnation: INC0() });
      expect(await leg.graph.addChild({ parent: parent.id })).toEqual({ slot: 2, incarnation: INC0() });
      expect((await leg.store.get(parent.id))?.childCount).toBe(2);
      const done = await put(leg, { state: 'succeeded', result: { ok: 1 } });
      const refused = await leg.graph.addChild({ parent: done.id });
      expect(refused.slot).toBeUndefined();
      expect('parent' in refused ? refused.parent?.state : undefined).toBe('succeeded');
      expect((await leg.store.get(done.id))?.childCount).toBeUndefined();
      expect(await leg.graph.addChild({ parent: id('missing') })).toEqual({});
    });

    it('children known at the parent’s creation fill slots 1..n, never over a slot taken', async () => {
      const leg = await setup();
      const parent = id('parent');
      const entries: ChildEntry[] = Array.from({ length: CHILDREN_CHUNK + 3 }, (_, i) => ({
        child: `k${i}`,
        policy: 'ignore',
        index: i % 4,
      }));
      await leg.graph.putChildren({ parent, incarnation: INC0(), entries, expiresAt: TTL });
      // a replay writes nothing over them
      await leg.graph.putChildren({
        parent,
        incarnation: INC0(),
        entries: entries.map((e) => ({ ...e, child: 'other' })),
        expiresAt: TTL,
      });
      await put(leg, { state: 'queued', childCount: entries.length, id: parent });
      const later = await leg.graph.addChild({ parent });
      expect(later.slot).toBe(entries.length + 1);
      const late: ChildEntry = { child: 'late', policy: 'fail', index: 0 };
      expect(
        await leg.graph.fillSlot({ parent, incarnation: INC0(), slot: later.slot ?? 0, entry: late, expiresAt: TTL }),
      ).toBe(true);
      expect(await leg.graph.children({ parent, incarnation: INC0(), count: entries.length + 1 })).toEqual([
        ...entries,
        late,
      ]);
    });

    it('a registration that lands before the release reads the registry is released with it', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'running' });
      const entries: ChildEntry[] = [];
      // more than one chunk
      for (let i = 0; i < CHILDREN_CHUNK + 2; i++) {
        const added = await leg.graph.addChild({ parent: parent.id });
        expect(added.slot).toBe(i + 1);
        const entry: ChildEntry = { child: `k${i}`, policy: i % 2 ? 'ignore' : 'cancel', index: i % 3 };
        expect(
          await leg.graph.fillSlot({ parent: parent.id, incarnation: INC0(), slot: i + 1, entry, expiresAt: TTL }),
        ).toBe(true);
        entries.push(entry);
      }
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: CHILDREN_CHUNK + 2 })).toEqual(
        entries,
      );
      // a slot is filled once
      expect(
        await leg.graph.fillSlot({
          parent: parent.id,
          incarnation: INC0(),
          slot: 1,
          entry: { child: 'z', policy: 'fail', index: 0 },
          expiresAt: TTL,
        }),
      ).toBe(false);
    });

    it('a fill replayed after it applied (its response lost) finds its own entry: true', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'running' });
      const added = await leg.graph.addChild({ parent: parent.id });
      const entry: ChildEntry = { child: 'mine', policy: 'ignore', index: 1, parents: 2 };
      const fill = (e: ChildEntry) =>
        leg.graph.fillSlot({ parent: parent.id, incarnation: INC0(), slot: added.slot ?? 0, entry: e, expiresAt: TTL });
      expect(await fill(entry)).toBe(true);
      expect(await fill(entry)).toBe(true);
      // another child's entry, or the same child at another index, is still refused
      expect(await fill({ ...entry, index: 0 })).toBe(false);
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: 1 })).toEqual([entry]);
    });

    it('a registration still in flight when the release reads finds its slot sealed, and is refused', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'running' });
      const first = await leg.graph.addChild({ parent: parent.id });
      const second = await leg.graph.addChild({ parent: parent.id });
      expect([first.slot, second.slot]).toEqual([1, 2]);
      const entry: ChildEntry = { child: 'early', policy: 'fail', index: 0 };
      expect(await leg.graph.fillSlot({ parent: parent.id, incarnation: INC0(), slot: 1, entry, expiresAt: TTL })).toBe(
        true,
      );
      // the release reads now: slot 2 is counted but empty, so it is sealed
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: 2 })).toEqual([entry]);
      const late: ChildEntry = { child: 'late', policy: 'fail', index: 0 };
      expect(
        await leg.graph.fillSlot({ parent: parent.id, incarnation: INC0(), slot: 2, entry: late, expiresAt: TTL }),
      ).toBe(false);
      // and a later read of the registry still does not list it
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: 2 })).toEqual([entry]);
    });
  });

  describe('release', () => {
    it('counts each edge once; the last makes the child queued, due no earlier than now', async () => {
      const leg = await setup();
      const child = await waitingChild(leg, 2, T0 + 60_000);
      const now = T0 + 1000;
      const base = resolvedBy('p', child.id, now);
      const first = await leg.graph.release({ ...base, index: 0 });
      expect(first.kind).toBe('counted');
      expect((await leg.store.get(child.id))?.pendingParents).toBe(1);
      // a replay of the same edge changes nothing
      const replay = await leg.graph.release({ ...base, index: 0 });
      expect(replay.kind).toBe('refused');
      expect((await leg.store.get(child.id))?.pendingParents).toBe(1);
      const last = await leg.graph.release({ ...base, index: 1, now: T0 + 120_000 });
      expect(last.kind).toBe('ready');
      const stored = await leg.store.get(child.id);
      expect(stored?.state).toBe('queued');
      expect(stored?.pendingParents).toBeUndefined();
      expect(stored?.runAt).toBe(new Date(T0 + 120_000).toISOString());
      // replays of either edge after the wake: refused, the child as it is
      for (const index of [0, 1]) {
        const again = await leg.graph.release({ ...base, index });
        expect(again.kind).toBe('refused');
        if (again.kind === 'refused') expect(again.job?.state).toBe('queued');
      }
    });

    it('a job that waits for the children it invoked (suspend with pendingParents) is released by them; each wait counts afresh', async () => {
      const leg = await setup();
      const job = await put(leg, { state: 'queued' });
      const claimAt = async (now: number) => {
        const claim = await leg.store.claim({ id: job.id, type: job.type, owner: `w${now}`, now, leaseMs: 30_000 });
        if (claim.kind !== 'claimed') throw new Error(`expected a claim, got ${claim.kind}`);
        return claim.job;
      };
      const waitFor = async (running: Job, now: number, children: number) =>
        leg.store.suspend({
          job: running,
          now,
          runAt: now,
          waitingFor: {
            kind: 'invoke',
            key: 'c',
            until: new Date(now + 86_400_000).toISOString(),
            since: new Date(now).toISOString(),
            children,
          },
          writer: running.leaseOwner ?? '',
          pendingParents: children,
        });
      // running: a child's release is refused (the job's own look counts it after its wait)
      const running = await claimAt(T0);
      expect((await leg.graph.release({ ...resolvedBy('c0', job.id, T0 + 1), index: 0 })).kind).toBe('refused');
      await waitFor(running, T0 + 2, 2);
      const waiting = await leg.store.get(job.id);
      expect(waiting).toMatchObject({ state: 'waiting', pendingParents: 2, attempts: 0, resumes: 1 });
      expect(waiting?.parentsResolved ?? []).toEqual([]);
      // no claim starts it while it waits for its children
      expect(
        (await leg.store.claim({ id: job.id, type: job.type, owner: 'x', now: T0 + 3, leaseMs: 30_000 })).kind,
      ).toBe('blocked');
      expect((await leg.graph.release({ ...resolvedBy('c0', job.id, T0 + 4), index: 0 })).kind).toBe('counted');
      expect((await leg.graph.release({ ...resolvedBy('c0', job.id, T0 + 4), index: 0 })).kind).toBe('refused');
      const last = await leg.graph.release({ ...resolvedBy('c1', job.id, T0 + 5), index: 1 });
      expect(last.kind).toBe('ready');
      expect(await leg.store.get(job.id)).toMatchObject({ state: 'queued', runAt: new Date(T0 + 5).toISOString() });
      // a second wait (a later invoke, index 2) counts from its own number: the earlier edges are gone
      await waitFor(await claimAt(T0 + 10), T0 + 11, 1);
      expect((await leg.store.get(job.id))?.pendingParents).toBe(1);
      expect((await leg.graph.release({ ...resolvedBy('c2', job.id, T0 + 12), index: 2 })).kind).toBe('ready');
      expect((await leg.store.get(job.id))?.state).toBe('queued');
    });

    it('an only parent’s release (one write): the child is queued; a replay is refused; a later runAt is kept', async () => {
      const leg = await setup();
      const child = await waitingChild(leg, 1);
      const input = {
        child: child.id,
        index: 0,
        outcome: resolve,
        parent: 'p',
        parentState: 'succeeded' as const,
        now: T0 + 1000,
        expiresAt: TTL,
        only: true,
      };
      const out = await leg.graph.release(input);
      expect(out.kind).toBe('ready');
      const stored = await leg.store.get(child.id);
      expect(stored?.state).toBe('queued');
      expect(stored?.pendingParents).toBeUndefined();
      expect(stored?.runAt).toBe(new Date(T0 + 1000).toISOString());
      const replay = await leg.graph.release(input);
      expect(replay.kind).toBe('refused');
      const later = await waitingChild(leg, 1, T0 + 600_000);
      const kept = await leg.graph.release({ ...input, child: later.id });
      expect(kept.kind).toBe('ready');
      expect((await leg.store.get(later.id))?.runAt).toBe(new Date(T0 + 600_000).toISOString());
      // a child with more parents than the entry said: counted, not woken
      const two = await waitingChild(leg, 2);
      expect((await leg.graph.release({ ...input, child: two.id })).kind).toBe('counted');
      expect((await leg.store.get(two.id))?.pendingParents).toBe(1);
    });

    it('keeps a later runAt when the last parent ends before it', async () => {
      const leg = await setup();
      const child = await waitingChild(leg, 1, T0 + 600_000);
      const out = await leg.graph.release({
        child: child.id,
        index: 0,
        outcome: resolve,
        parent: 'p',
        parentState: 'succeeded',
        now: T0,
        expiresAt: TTL,
      });
      expect(out.kind).toBe('ready');
      expect((await leg.store.get(child.id))?.runAt).toBe(new Date(T0 + 600_000).toISOString());
    });

    it('a replay that finds the count at zero but the child still waiting finishes the wake', async () => {
      const leg = await setup();
      // the state a release leaves when it died between the decrement and the wake
      const child = await waitingChild(leg, 0);
      const out = await leg.graph.release({
        child: child.id,
        index: 3,
        outcome: resolve,
        parent: 'p',
        parentState: 'succeeded',
        now: T0,
        expiresAt: TTL,
      });
      expect(out.kind).toBe('ready');
      expect((await leg.store.get(child.id))?.state).toBe('queued');
    });

    for (const [policy, state] of [
      ['fail', 'failed'],
      ['cancel', 'cancelled'],
    ] as const) {
      it(`policy ${policy}: a failed parent ends the child ${state}, once, naming the parent`, async () => {
        const leg = await setup();
        const child = await waitingChild(leg, 2);
        const input = {
          child: child.id,
          index: 1,
          outcome: edgeOutcome('failed', policy),
          parent: 'the-parent',
          parentState: 'failed' as const,
          now: T0 + 5000,
          expiresAt: TTL,
        };
        const out = await leg.graph.release(input);
        expect(out.kind).toBe('ended');
        const stored = await leg.store.get(child.id);
        expect(stored?.state).toBe(state);
        expect(stored?.pendingParents).toBeUndefined();
        expect(stored?.finishedAt).toBe(new Date(T0 + 5000).toISOString());
        expect(stored?.expiresAt).toBe(TTL);
        expect(stored?.lastError?.reason).toBe('parent_failed');
        expect(stored?.lastError?.message).toContain('the-parent');
        expect(stored?.attempts).toBe(0);
        // the other parent's release, and a replay, find it not waiting
        expect((await leg.graph.release(input)).kind).toBe('refused');
        expect((await leg.graph.release({ ...input, index: 0, outcome: resolve, parentState: 'succeeded' })).kind).toBe(
          'refused',
        );
        expect((await leg.store.get(child.id))?.state).toBe(state);
      });
    }

    it('policy ignore: a failed parent counts as done', async () => {
      const leg = await setup();
      const child = await waitingChild(leg, 1);
      const out = await leg.graph.release({
        child: child.id,
        index: 0,
        outcome: edgeOutcome('cancelled', 'ignore'),
        parent: 'p',
        parentState: 'cancelled',
        now: T0,
        expiresAt: TTL,
      });
      expect(out.kind).toBe('ready');
    });

    it('refuses a child that does not wait for parents (cancelled, running, sleeping, missing)', async () => {
      const leg = await setup();
      const cancelled = await put(leg, { state: 'cancelled' });
      const running = await put(leg, { state: 'running', leaseToken: 1, attempts: 1 });
      const sleeping = await put(leg, { state: 'waiting' });
      for (const child of [cancelled.id, running.id, sleeping.id, id('missing')]) {
        for (const outcome of [resolve, edgeOutcome('failed', 'fail')]) {
          const out = await leg.graph.release({
            child,
            index: 0,
            outcome,
            parent: 'p',
            parentState: outcome.kind === 'resolve' ? 'succeeded' : 'failed',
            now: T0,
            expiresAt: TTL,
          });
          expect(out.kind).toBe('refused');
        }
      }
      expect((await leg.store.get(sleeping.id))?.state).toBe('waiting');
      expect((await leg.store.get(running.id))?.state).toBe('running');
    });
  });

  describe('identity', () => {
    it('a reused id has parents and a registry of its own: none of the old incarnation’s', async () => {
      const leg = await setup();
      // the first job of the id: a parent that registered one child, then ended past its
      // retention (only its expiresAt matters to the create condition)
      const old = await put(leg, { state: 'running', expiresAt: Math.floor(T0 / 1000) + 60 });
      const first = await leg.graph.addChild({ parent: old.id });
      expect(first).toEqual({ slot: 1, incarnation: INC0() });
      const oldChild: ChildEntry = { child: 'c-old', policy: 'fail', index: 0, parents: 1 };
      expect(
        await leg.graph.fillSlot({ parent: old.id, incarnation: INC0(), slot: 1, entry: oldChild, expiresAt: TTL }),
      ).toBe(true);
      await leg.graph.putParents({
        child: old.id,
        incarnation: INC0(),
        parents: [{ id: 'p-old', policy: 'fail' }],
        expiresAt: TTL,
      });

      // a day later the id is taken by a new job
      const later = T0 + 86_400_000;
      const reborn = newJob({ id: old.id, type: 'echo', state: 'running' }, later);
      expect((await leg.store.create(reborn)).created).toBe(true);
      const incarnation = incarnationOf(reborn.createdAt);
      expect(incarnation).not.toBe(INC0());
      expect(await leg.graph.parents({ child: old.id, incarnation })).toBeUndefined();
      expect(await leg.graph.children({ parent: old.id, incarnation, count: 1, seal: false })).toEqual([]);
      // its first child takes slot 1 of its own registry
      const added = await leg.graph.addChild({ parent: old.id });
      expect(added).toEqual({ slot: 1, incarnation });
      const mine: ChildEntry = { child: 'd-new', policy: 'fail', index: 0, parents: 1 };
      expect(await leg.graph.fillSlot({ parent: old.id, incarnation, slot: 1, entry: mine, expiresAt: TTL })).toBe(
        true,
      );
      expect(await leg.graph.children({ parent: old.id, incarnation, count: 1 })).toEqual([mine]);
      // the old incarnation's items are untouched (they end at their own TTL)
      expect(await leg.graph.children({ parent: old.id, incarnation: INC0(), count: 1, seal: false })).toEqual([
        oldChild,
      ]);
      expect(await leg.graph.parents({ child: old.id, incarnation: INC0() })).toEqual([
        { id: 'p-old', policy: 'fail' },
      ]);
    });

    it('a release whose child is another incarnation changes nothing (the parent outlived the child’s retention)', async () => {
      const leg = await setup();
      // the edge names the job of the id created at T0; the id now belongs to a job created a day later
      const later = T0 + 86_400_000;
      const create = async (pending: number) => {
        const job = newJob(
          {
            id: id('reused'),
            type: 'echo',
            state: 'waiting',
            pendingParents: pending,
            runAt: new Date(T0).toISOString(),
          },
          later,
        );
        expect((await leg.store.create(job)).created).toBe(true);
        return job;
      };
      const reused = await create(1);
      const stale = { index: 0, parent: 'p', now: later + 1000, expiresAt: TTL, incarnation: INC0() };
      const succeeded = { outcome: resolve, parentState: 'succeeded' as const };
      const outcomes = [
        { ...succeeded, only: true },
        succeeded,
        { outcome: edgeOutcome('failed', 'fail'), parentState: 'failed' as const },
        { outcome: edgeOutcome('failed', 'cancel'), parentState: 'failed' as const },
      ];
      for (const edge of outcomes) {
        // refused with no job: nothing to do for this edge (no wake, no send)
        expect(await leg.graph.release({ ...stale, ...edge, child: reused.id })).toEqual({ kind: 'refused' });
      }
      const stored = await leg.store.get(reused.id);
      expect(stored).toMatchObject({ state: 'waiting', pendingParents: 1, createdAt: reused.createdAt });
      expect(stored?.parentsResolved).toBeUndefined();
      // a job of the id whose count is at zero (a wake left undone) is not woken by the old edge either
      const atZero = await create(0);
      expect(await leg.graph.release({ ...stale, ...succeeded, child: atZero.id })).toEqual({ kind: 'refused' });
      expect((await leg.store.get(atZero.id))?.state).toBe('waiting');
      // its own edge (its incarnation) is released as usual
      const own = { ...stale, ...succeeded, child: reused.id, incarnation: incarnationOf(reused.createdAt) };
      expect((await leg.graph.release(own)).kind).toBe('ready');
      expect((await leg.store.get(reused.id))?.state).toBe('queued');
    });

    it('a registry entry keeps the child’s incarnation', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'running' });
      const added = await leg.graph.addChild({ parent: parent.id });
      const entry: ChildEntry = { child: 'c', policy: 'fail', index: 0, parents: 1, incarnation: INC0() };
      expect(
        await leg.graph.fillSlot({
          parent: parent.id,
          incarnation: INC0(),
          slot: added.slot ?? 0,
          entry,
          expiresAt: TTL,
        }),
      ).toBe(true);
      const flowParent = id('flow-parent');
      const flowEntry: ChildEntry = { child: 'd', policy: 'ignore', index: 1, parents: 2, incarnation: INC0() };
      await leg.graph.putChildren({ parent: flowParent, incarnation: INC0(), entries: [flowEntry], expiresAt: TTL });
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: 1 })).toEqual([entry]);
      expect(await leg.graph.children({ parent: flowParent, incarnation: INC0(), count: 1 })).toEqual([flowEntry]);
    });
  });

  describe('release record and reads', () => {
    it('the success write tells the children count, so a job without any needs no read', async () => {
      const leg = await setup();
      const running = { state: 'running' as const, leaseToken: 1, leaseOwner: 'w', attempts: 1 };
      const parent = await put(leg, { ...running });
      await leg.graph.addChild({ parent: parent.id });
      await leg.graph.addChild({ parent: parent.id });
      const alone = await put(leg, { ...running });
      const end = (job: Job) => leg.store.succeed({ job, now: T0 + 1000, result: null, expiresAt: TTL, writer: 'w' });
      expect(await end(parent)).toEqual({ childCount: 2 });
      expect(await end(alone)).toEqual({ childCount: 0 });
      // a replay of the same write (its answer lost) says the same
      expect(await end(parent)).toEqual({ childCount: 2 });
    });

    it('records the slots released, never backwards', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'succeeded', childCount: 5 });
      await leg.graph.markReleased({ parent: parent.id, count: 5 });
      await leg.graph.markReleased({ parent: parent.id, count: 3 });
      expect((await leg.store.get(parent.id))?.childrenReleased).toBe(5);
    });

    it('a view of the registry reads without sealing: a registration in flight still lands', async () => {
      const leg = await setup();
      const parent = await put(leg, { state: 'running' });
      const added = await leg.graph.addChild({ parent: parent.id });
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: 1, seal: false })).toEqual([]);
      const entry: ChildEntry = { child: 'c', policy: 'fail', index: 0 };
      expect(
        await leg.graph.fillSlot({
          parent: parent.id,
          incarnation: INC0(),
          slot: added.slot ?? 0,
          entry,
          expiresAt: TTL,
        }),
      ).toBe(true);
      expect(await leg.graph.children({ parent: parent.id, incarnation: INC0(), count: 1, seal: false })).toEqual([
        entry,
      ]);
    });

    it('keeps a flow’s record', async () => {
      const { graph } = await setup();
      const flowId = id('flow');
      const record = {
        id: flowId,
        createdAt: new Date(T0).toISOString(),
        nodes: [
          { id: 'a', type: 'echo', dependsOn: [] },
          { id: 'b', type: 'echo', dependsOn: [{ id: 'a', policy: 'ignore' as const }] },
        ],
      };
      await graph.putFlow({ ...record, expiresAt: TTL });
      expect(await graph.flow(flowId)).toEqual(record);
      expect(await graph.flow(id('none'))).toBeUndefined();
    });

    it('a child created with parents already counted (finished at enqueue) refuses their edges', async () => {
      const leg = await setup();
      const child = await put(leg, { state: 'waiting', pendingParents: 1, parentsResolved: [0] });
      const base = resolvedBy('p', child.id);
      expect((await leg.graph.release({ ...base, index: 0 })).kind).toBe('refused');
      expect((await leg.store.get(child.id))?.pendingParents).toBe(1);
      expect((await leg.graph.release({ ...base, index: 1 })).kind).toBe('ready');
    });

    it('a waiting child read back lists the edges counted so far, at its creation and by releases', async () => {
      const leg = await setup();
      const child = await put(leg, { state: 'waiting', pendingParents: 2, parentsResolved: [1] });
      const base = resolvedBy('p', child.id);
      expect((await leg.graph.jobs([child.id])).get(child.id)?.parentsResolved).toEqual([1]);
      expect((await leg.graph.release({ ...base, index: 2 })).kind).toBe('counted');
      const read = (await leg.graph.jobs([child.id])).get(child.id);
      expect(read?.parentsResolved).toEqual([1, 2]);
      expect((await leg.store.get(child.id))?.parentsResolved).toEqual([1, 2]);
      // gone once it leaves waiting
      expect((await leg.graph.release({ ...base, index: 0 })).kind).toBe('ready');
      expect((await leg.graph.jobs([child.id])).get(child.id)?.parentsResolved).toBeUndefined();
    });

    it('reads many status items at once, with their results; missing ones left out', async () => {
      const leg = await setup();
      const jobs = await Promise.all(
        Array.from({ length: 105 }, (_, i) => put(leg, { state: 'succeeded', result: { i } })),
      );
      const read = await leg.graph.jobs([...jobs.map((j) => j.id), id('missing')]);
      expect(read.size).toBe(105);
      expect(read.get(jobs[104]?.id ?? '')?.result).toEqual({ i: 104 });
    });
  });
}
