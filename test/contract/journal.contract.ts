/**
 * The contract of {@link Journal}, run against the in-memory fake (test/unit/contract-fakes.test.ts)
 * and the DynamoDB adapter on DynamoDB Local (test/integration/contract-adapters.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Journal } from '../../shared/core/journal';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const TTL = Math.floor(T0 / 1000) + 86_400;
/** An incarnation of a job id (opaque to the journal). */
const INC = 'i0';

export function journalContract(setup: () => Promise<Journal>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const jobId = () => `j-${run}-${++seq}`;

  describe('journal', () => {
    it('records an entry once: the first write wins, a later one gets it back unchanged', async () => {
      const journal = await setup();
      const id = jobId();
      expect(await journal.get({ jobId: id, incarnation: INC, kind: 'step', name: 'charge' })).toBeUndefined();
      const first = {
        jobId: id,
        incarnation: INC,
        kind: 'step' as const,
        name: 'charge',
        value: { ok: 1, n: [1, 'two', null] },
        at: T0,
        expiresAt: TTL,
      };
      expect(await journal.record(first)).toEqual({ recorded: true });
      expect(await journal.get({ jobId: id, incarnation: INC, kind: 'step', name: 'charge' })).toEqual({
        value: { ok: 1, n: [1, 'two', null] },
        at: iso(T0),
      });
      expect(await journal.record({ ...first, value: 'other', at: T0 + 5 })).toEqual({
        recorded: false,
        existing: { value: { ok: 1, n: [1, 'two', null] }, at: iso(T0) },
      });
      expect(await journal.get({ jobId: id, incarnation: INC, kind: 'step', name: 'charge' })).toEqual({
        value: { ok: 1, n: [1, 'two', null] },
        at: iso(T0),
      });
    });

    it("keeps an entry's mark (position, version, patches, racing, nested) with it: get, load and a refused write give it back", async () => {
      const journal = await setup();
      const id = jobId();
      const scope = { jobId: id, incarnation: INC };
      const mark = { seq: 3, version: 'v42', patches: ['fraud-check'], racing: true, nested: true };
      const entry = { ...scope, kind: 'step' as const, name: 'ship', value: 'ok', at: T0, expiresAt: TTL, mark };
      expect(await journal.record(entry)).toEqual({ recorded: true });
      const stored = { value: 'ok', at: iso(T0), mark };
      expect(await journal.get({ ...scope, kind: 'step', name: 'ship' })).toEqual(stored);
      expect((await journal.load(scope)).get('step#ship')).toEqual(stored);
      expect(await journal.record({ ...entry, mark: { seq: 9 } })).toEqual({ recorded: false, existing: stored });
      // an entry without one (the API's signal outcome) has none
      await journal.record({
        ...scope,
        kind: 'signal',
        name: 'go',
        value: { received: iso(T0) },
        at: T0,
        expiresAt: TTL,
      });
      expect((await journal.load(scope)).get('signal#go')).toEqual({ value: { received: iso(T0) }, at: iso(T0) });
    });

    it('gives back a result of about 1 KB, and one of 64 KiB, whole', async () => {
      const journal = await setup();
      const id = jobId();
      const kilo = {
        items: Array.from({ length: 12 }, (_, i) => ({ sku: `SKU-${1000 + i}`, qty: i, name: 'café crème' })),
      };
      const big = { text: 'x'.repeat(60_000), n: 1 };
      await journal.record({
        jobId: id,
        incarnation: INC,
        kind: 'step',
        name: 'kilo',
        value: kilo,
        at: T0,
        expiresAt: TTL,
      });
      await journal.record({
        jobId: id,
        incarnation: INC,
        kind: 'step',
        name: 'big',
        value: big,
        at: T0,
        expiresAt: TTL,
      });
      expect((await journal.get({ jobId: id, incarnation: INC, kind: 'step', name: 'kilo' }))?.value).toEqual(kilo);
      expect((await journal.get({ jobId: id, incarnation: INC, kind: 'step', name: 'big' }))?.value).toEqual(big);
      expect(
        await journal.record({
          jobId: id,
          incarnation: INC,
          kind: 'step',
          name: 'kilo',
          value: 1,
          at: T0,
          expiresAt: TTL,
        }),
      ).toEqual({
        recorded: false,
        existing: { value: kilo, at: iso(T0) },
      });
    });

    it('keeps kinds, names and jobs apart, and records undefined as null', async () => {
      const journal = await setup();
      const a = jobId();
      const b = jobId();
      await journal.record({
        jobId: a,
        incarnation: INC,
        kind: 'step',
        name: 'x',
        value: undefined,
        at: T0,
        expiresAt: TTL,
      });
      await journal.record({ jobId: a, incarnation: INC, kind: 'sleep', name: 'x', value: 2, at: T0, expiresAt: TTL });
      expect(await journal.get({ jobId: a, incarnation: INC, kind: 'step', name: 'x' })).toEqual({
        value: null,
        at: iso(T0),
      });
      expect(await journal.get({ jobId: a, incarnation: INC, kind: 'sleep', name: 'x' })).toEqual({
        value: 2,
        at: iso(T0),
      });
      expect(await journal.get({ jobId: a, incarnation: INC, kind: 'wait', name: 'x' })).toBeUndefined();
      expect(await journal.get({ jobId: a, incarnation: INC, kind: 'step', name: 'y' })).toBeUndefined();
      expect(await journal.get({ jobId: b, incarnation: INC, kind: 'step', name: 'x' })).toBeUndefined();
    });

    it('delivers a signal once per name: a later send gets the first back', async () => {
      const journal = await setup();
      const id = jobId();
      expect(await journal.signal({ jobId: id, incarnation: INC, name: 'paid' })).toBeUndefined();
      const signal = { payload: { amount: 42 }, payloadHash: 'h1', at: iso(T0) };
      expect(await journal.deliver({ jobId: id, incarnation: INC, name: 'paid', signal, expiresAt: TTL })).toEqual({
        stored: true,
      });
      expect(await journal.signal({ jobId: id, incarnation: INC, name: 'paid' })).toEqual(signal);
      expect(
        await journal.deliver({
          jobId: id,
          incarnation: INC,
          name: 'paid',
          signal: { ...signal, payloadHash: 'h2', payload: 1 },
          expiresAt: TTL,
        }),
      ).toEqual({ stored: false, existing: signal });
      expect(await journal.signal({ jobId: id, incarnation: INC, name: 'shipped' })).toBeUndefined();
      // the inbox is not the journal
      expect(await journal.get({ jobId: id, incarnation: INC, kind: 'signal', name: 'paid' })).toBeUndefined();
    });

    it('keeps the incarnations of an id apart: a reused id reads none of the old one’s entries or inbox', async () => {
      const journal = await setup();
      const id = jobId();
      const old = { jobId: id, incarnation: 'old1' };
      const now = { jobId: id, incarnation: 'new2' };
      for (const kind of ['step', 'sleep', 'wait', 'signal'] as const) {
        await journal.record({ ...old, kind, name: 'x', value: `old-${kind}`, at: T0, expiresAt: TTL });
      }
      const signal = { payload: { amount: 1 }, payloadHash: 'h-old', at: iso(T0) };
      await journal.deliver({ ...old, name: 'paid', signal, expiresAt: TTL });
      for (const kind of ['step', 'sleep', 'wait', 'signal'] as const) {
        expect(await journal.get({ ...now, kind, name: 'x' })).toBeUndefined();
        expect(await journal.get({ ...old, kind, name: 'x' })).toEqual({ value: `old-${kind}`, at: iso(T0) });
      }
      expect(await journal.signal({ ...now, name: 'paid' })).toBeUndefined();
      expect((await journal.load(now)).size).toBe(0);
      // the new incarnation records its own, first: nothing of the old one stands in its way
      expect(await journal.record({ ...now, kind: 'step', name: 'x', value: 'new', at: T0, expiresAt: TTL })).toEqual({
        recorded: true,
      });
      const mine = { payload: { amount: 2 }, payloadHash: 'h-new', at: iso(T0 + 1) };
      expect(await journal.deliver({ ...now, name: 'paid', signal: mine, expiresAt: TTL })).toEqual({ stored: true });
      expect(await journal.signal({ ...now, name: 'paid' })).toEqual(mine);
      expect(await journal.signal({ ...old, name: 'paid' })).toEqual(signal);
    });

    it('keeps the series of a journal apart (a rerun), while the inbox stays the incarnation’s', async () => {
      const journal = await setup();
      const id = jobId();
      const first = { jobId: id, incarnation: INC };
      const rerun = { jobId: id, incarnation: INC, series: 'r1.a' };
      await journal.record({ ...first, kind: 'step', name: 'x', value: 'first', at: T0, expiresAt: TTL });
      await journal.record({ ...first, kind: 'step', name: 'y', value: 'first-y', at: T0 + 1, expiresAt: TTL });
      expect((await journal.load(rerun)).size).toBe(0);
      expect(await journal.get({ ...rerun, kind: 'step', name: 'x' })).toBeUndefined();
      // the series records its own (a rerun's copy keeps the recorded time), whatever the first holds
      expect(
        await journal.record({ ...rerun, kind: 'step', name: 'x', value: 'copy', at: T0, expiresAt: TTL }),
      ).toEqual({
        recorded: true,
      });
      expect(
        await journal.record({
          ...rerun,
          kind: 'rerun',
          name: 'marker',
          value: { nextInvokeIndex: 3 },
          at: T0 + 2,
          expiresAt: TTL,
        }),
      ).toEqual({ recorded: true });
      expect(await journal.load(rerun)).toEqual(
        new Map([
          ['step#x', { value: 'copy', at: iso(T0) }],
          ['rerun#marker', { value: { nextInvokeIndex: 3 }, at: iso(T0 + 2) }],
        ]),
      );
      // a late write to the first series changes nothing in the rerun's
      await journal.record({ ...first, kind: 'step', name: 'z', value: 'late', at: T0 + 3, expiresAt: TTL });
      expect((await journal.load(rerun)).has('step#z')).toBe(false);
      expect((await journal.load(first)).size).toBe(3);
      // one inbox for the incarnation, whichever series reads it
      const signal = { payload: { amount: 1 }, payloadHash: 'h', at: iso(T0) };
      await journal.deliver({ ...first, name: 'paid', signal, expiresAt: TTL });
      expect(await journal.signal({ ...rerun, name: 'paid' })).toEqual(signal);
    });

    it('loads an incarnation’s whole journal at once (over several 1 MB pages), without its inbox', async () => {
      const journal = await setup();
      const scope = { jobId: jobId(), incarnation: 'pages1' };
      // 40 steps of 60,000 characters of random text (about 45 KB each even gzipped: 1.8 MB in all)
      const values = new Map<string, unknown>();
      for (let i = 0; i < 40; i++) {
        const value = { i, text: randomBytes(45_000).toString('base64') };
        values.set(`step#s-${i}`, value);
        await journal.record({ ...scope, kind: 'step', name: `s-${i}`, value, at: T0 + i, expiresAt: TTL });
      }
      await journal.record({ ...scope, kind: 'sleep', name: 'nap', value: T0 + 5, at: T0, expiresAt: TTL });
      await journal.record({ ...scope, kind: 'wait', name: 'paid', value: T0 + 9, at: T0, expiresAt: TTL });
      await journal.record({ ...scope, kind: 'signal', name: 'paid', value: { payload: 1 }, at: T0, expiresAt: TTL });
      await journal.deliver({
        ...scope,
        name: 'paid',
        signal: { payload: 1, payloadHash: 'h', at: iso(T0) },
        expiresAt: TTL,
      });
      // another job's entries are not loaded
      await journal.record({
        jobId: jobId(),
        incarnation: 'pages1',
        kind: 'step',
        name: 's-0',
        value: 0,
        at: T0,
        expiresAt: TTL,
      });
      const loaded = await journal.load(scope);
      expect(loaded.size).toBe(43);
      for (const [key, value] of values) expect(loaded.get(key)).toEqual({ value, at: iso(T0 + Number(key.slice(7))) });
      expect(loaded.get('sleep#nap')).toEqual({ value: T0 + 5, at: iso(T0) });
      expect(loaded.get('wait#paid')).toEqual({ value: T0 + 9, at: iso(T0) });
      expect(loaded.get('signal#paid')).toEqual({ value: { payload: 1 }, at: iso(T0) });
      expect(loaded.get('inbox#paid')).toBeUndefined();
    });
  });
}
