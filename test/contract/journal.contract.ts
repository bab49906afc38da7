/**
 * The contract of {@link Journal}, run against the in-memory fake (test/unit/contract-fakes.test.ts)
 * and the DynamoDB adapter on DynamoDB Local (test/integration/contract-adapters.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Journal } from '../../shared/core/journal';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const TTL = Math.floor(T0 / 1000) + 86_400;

export function journalContract(setup: () => Promise<Journal>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const jobId = () => `j-${run}-${++seq}`;

  describe('journal', () => {
    it('records an entry once: the first write wins, a later one gets it back unchanged', async () => {
      const journal = await setup();
      const id = jobId();
      expect(await journal.get({ jobId: id, kind: 'step', name: 'charge' })).toBeUndefined();
      const first = {
        jobId: id,
        kind: 'step' as const,
        name: 'charge',
        value: { ok: 1, n: [1, 'two', null] },
        at: T0,
        expiresAt: TTL,
      };
      expect(await journal.record(first)).toEqual({ recorded: true });
      expect(await journal.get({ jobId: id, kind: 'step', name: 'charge' })).toEqual({
        value: { ok: 1, n: [1, 'two', null] },
        at: iso(T0),
      });
      expect(await journal.record({ ...first, value: 'other', at: T0 + 5 })).toEqual({
        recorded: false,
        existing: { value: { ok: 1, n: [1, 'two', null] }, at: iso(T0) },
      });
      expect(await journal.get({ jobId: id, kind: 'step', name: 'charge' })).toEqual({
        value: { ok: 1, n: [1, 'two', null] },
        at: iso(T0),
      });
    });

    it('gives back a result of about 1 KB, and one of 64 KiB, whole', async () => {
      const journal = await setup();
      const id = jobId();
      const kilo = {
        items: Array.from({ length: 12 }, (_, i) => ({ sku: `SKU-${1000 + i}`, qty: i, name: 'café crème' })),
      };
      const big = { text: 'x'.repeat(60_000), n: 1 };
      await journal.record({ jobId: id, kind: 'step', name: 'kilo', value: kilo, at: T0, expiresAt: TTL });
      await journal.record({ jobId: id, kind: 'step', name: 'big', value: big, at: T0, expiresAt: TTL });
      expect((await journal.get({ jobId: id, kind: 'step', name: 'kilo' }))?.value).toEqual(kilo);
      expect((await journal.get({ jobId: id, kind: 'step', name: 'big' }))?.value).toEqual(big);
      expect(await journal.record({ jobId: id, kind: 'step', name: 'kilo', value: 1, at: T0, expiresAt: TTL })).toEqual(
        {
          recorded: false,
          existing: { value: kilo, at: iso(T0) },
        },
      );
    });

    it('keeps kinds, names and jobs apart, and records undefined as null', async () => {
      const journal = await setup();
      const a = jobId();
      const b = jobId();
      await journal.record({ jobId: a, kind: 'step', name: 'x', value: undefined, at: T0, expiresAt: TTL });
      await journal.record({ jobId: a, kind: 'sleep', name: 'x', value: 2, at: T0, expiresAt: TTL });
      expect(await journal.get({ jobId: a, kind: 'step', name: 'x' })).toEqual({ value: null, at: iso(T0) });
      expect(await journal.get({ jobId: a, kind: 'sleep', name: 'x' })).toEqual({ value: 2, at: iso(T0) });
      expect(await journal.get({ jobId: a, kind: 'wait', name: 'x' })).toBeUndefined();
      expect(await journal.get({ jobId: a, kind: 'step', name: 'y' })).toBeUndefined();
      expect(await journal.get({ jobId: b, kind: 'step', name: 'x' })).toBeUndefined();
    });

    it('delivers a signal once per name: a later send gets the first back', async () => {
      const journal = await setup();
      const id = jobId();
      expect(await journal.signal({ jobId: id, name: 'paid' })).toBeUndefined();
      const signal = { payload: { amount: 42 }, payloadHash: 'h1', at: iso(T0) };
      expect(await journal.deliver({ jobId: id, name: 'paid', signal, expiresAt: TTL })).toEqual({ stored: true });
      expect(await journal.signal({ jobId: id, name: 'paid' })).toEqual(signal);
      expect(
        await journal.deliver({
          jobId: id,
          name: 'paid',
          signal: { ...signal, payloadHash: 'h2', payload: 1 },
          expiresAt: TTL,
        }),
      ).toEqual({ stored: false, existing: signal });
      expect(await journal.signal({ jobId: id, name: 'shipped' })).toBeUndefined();
      // the inbox is not the journal
      expect(await journal.get({ jobId: id, kind: 'signal', name: 'paid' })).toBeUndefined();
    });
  });
}
