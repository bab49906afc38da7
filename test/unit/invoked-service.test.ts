/**
 * `GET /jobs/{id}/invoked`'s service: the jobs a job invoked, read from its journal's `invoke#`
 * entries in the order of their edge indexes, 100 a page, each with its state; children of types
 * the caller may not read left out; a bad cursor a 400, an unknown job a 404; nothing written.
 */
import { describe, expect, it } from 'vitest';
import { InvokedService } from '../../shared/api/invoked-service';
import { incarnationOf } from '../../shared/core/table';
import { NotFoundError, ValidationError } from '../../shared/errors';
import { FakeJobStore, newJob } from '../support/fakes';
import { FakeJournal } from '../support/journal-fake';

const NOW = Date.parse('2026-01-01T00:00:00Z');

async function setup(children: { name: string; index: number; type?: string; state?: 'succeeded' | 'running' }[]) {
  const store = new FakeJobStore();
  const journal = new FakeJournal();
  const parent = newJob({ id: 'quote-1', type: 'quote-order', state: 'waiting' }, NOW);
  store.seed(parent);
  for (const child of children) {
    const id = `quote-1.${child.name}`;
    await journal.record({
      jobId: parent.id,
      incarnation: incarnationOf(parent.createdAt),
      kind: 'invoke',
      name: child.name,
      value: { id, index: child.index },
      at: NOW,
      expiresAt: NOW / 1000 + 86_400,
    });
    // a child without a type was never written (or is past its retention)
    if (child.type) store.seed(newJob({ id, type: child.type, state: child.state ?? 'succeeded' }, NOW));
  }
  // an entry of another kind is not an invoke
  await journal.record({
    jobId: parent.id,
    incarnation: incarnationOf(parent.createdAt),
    kind: 'invoked',
    name: 'price-0',
    value: { state: 'succeeded', result: 1 },
    at: NOW,
    expiresAt: NOW / 1000 + 86_400,
  });
  return { store, journal, service: new InvokedService({ store, journal, clock: { now: () => NOW } }) };
}

describe('InvokedService', () => {
  it('lists the invoked jobs in the order of their edge indexes, with type and state', async () => {
    const { service, store } = await setup([
      { name: 'price-1', index: 1, type: 'price-item', state: 'running' },
      { name: 'price-0', index: 0, type: 'price-item' },
      { name: 'gone', index: 2 },
    ]);
    const before = store.calls.length;
    const { type, page } = await service.list('quote-1', { kind: 'all' });
    expect(type).toBe('quote-order');
    expect(page).toEqual({
      id: 'quote-1',
      items: [
        { name: 'price-0', id: 'quote-1.price-0', type: 'price-item', state: 'succeeded' },
        { name: 'price-1', id: 'quote-1.price-1', type: 'price-item', state: 'running' },
        { name: 'gone', id: 'quote-1.gone', type: null, state: null },
      ],
      nextCursor: null,
    });
    // reads only: the parent and each child
    expect(store.calls.slice(before).map((c) => c.method)).toEqual(['get', 'get', 'get', 'get']);
  });

  it('pages by 100, and a cursor continues where the page ended', async () => {
    const children = Array.from({ length: 150 }, (_, i) => ({ name: `c${i}`, index: i, type: 'price-item' }));
    const { service } = await setup(children);
    const first = (await service.list('quote-1', { kind: 'all' })).page;
    expect(first.items).toHaveLength(100);
    expect(first.nextCursor).toBe('100');
    const second = (await service.list('quote-1', { kind: 'all' }, first.nextCursor ?? undefined)).page;
    expect(second.items.map((i) => i.name)).toEqual(children.slice(100).map((c) => c.name));
    expect(second.nextCursor).toBeNull();
  });

  it('leaves out the children of types the caller may not read', async () => {
    const { service } = await setup([
      { name: 'a', index: 0, type: 'price-item' },
      { name: 'b', index: 1, type: 'secret-item' },
    ]);
    const { page } = await service.list('quote-1', { kind: 'some', types: new Set(['quote-order', 'price-item']) });
    expect(page.items.map((i) => i.name)).toEqual(['a']);
  });

  it('after a rerun, lists the invokes of the series the job runs on, not those the rerun dropped', async () => {
    const { service, store, journal } = await setup([{ name: 'dropped', index: 0, type: 'price-item' }]);
    const job = await store.get('quote-1');
    if (!job) throw new Error('no job');
    store.seed({ ...job, journal: 'r1.a', reruns: 1 });
    await journal.record({
      jobId: job.id,
      incarnation: incarnationOf(job.createdAt),
      series: 'r1.a',
      kind: 'invoke',
      name: 'again',
      value: { id: 'quote-1.again', index: 1 },
      at: NOW,
      expiresAt: NOW / 1000 + 86_400,
    });
    const { page } = await service.list('quote-1', { kind: 'all' });
    expect(page.items.map((i) => i.name)).toEqual(['again']);
  });

  it('answers an empty page for a job that invoked nothing', async () => {
    const { service } = await setup([]);
    expect((await service.list('quote-1', { kind: 'all' })).page).toEqual({
      id: 'quote-1',
      items: [],
      nextCursor: null,
    });
  });

  it('refuses a cursor it did not give (400, on the field), and a job not stored (404)', async () => {
    const { service } = await setup([]);
    const bad = await service.list('quote-1', { kind: 'all' }, 'abc').catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).issues).toEqual([{ path: 'cursor', message: 'must be a cursor a page gave' }]);
    await expect(service.list('nope', { kind: 'all' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(service.list('not a valid id!', { kind: 'all' })).rejects.toBeInstanceOf(NotFoundError);
  });
});
