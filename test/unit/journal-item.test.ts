/** The size of a journal entry's item, as DynamoDB bills it: a step result of about 1 KB is one write unit. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { journalEntryItem } from '../../shared/aws/dynamo-journal';
import { itemBytes, ONE_WRITE_UNIT_BYTES } from '../../shared/aws/job-item';
import { jsonBytes } from '../../shared/core/limits';

const entry = (value: unknown) =>
  journalEntryItem({
    jobId: 'order-1234567890-abcdef',
    incarnation: 'mbx3k2p4',
    kind: 'step',
    name: 'reserve-stock',
    value,
    at: 0,
    expiresAt: 2e9,
  });

describe('journal entry items', () => {
  it('keeps a small result as plain JSON text', () => {
    const item = entry({ ok: true });
    expect(item.value?.S).toBe('{"ok":true}');
    expect(item.valueGz).toBeUndefined();
  });

  it('stores a result of 1 KB of ordinary JSON in one write unit (gzipped), where plain text takes two', () => {
    const value = {
      items: Array.from({ length: 20 }, (_, i) => ({ sku: `SKU-${1000 + i}`, qty: i, warehouse: 'eu-west' })),
    };
    expect(jsonBytes(value)).toBeGreaterThan(900);
    expect(jsonBytes(value)).toBeLessThanOrEqual(1024);
    const item = entry(value);
    expect(item.valueGz?.B).toBeDefined();
    expect(itemBytes(item)).toBeLessThanOrEqual(ONE_WRITE_UNIT_BYTES);
    expect(
      itemBytes(
        journalEntryItem({
          jobId: 'x',
          incarnation: 'mbx3k2p4',
          kind: 'step',
          name: 'y',
          value: 'z',
          at: 0,
          expiresAt: 0,
        }),
      ),
    ).toBeLessThan(100);
  });

  it('keeps plain text when gzip would not save a write unit (incompressible data)', () => {
    const item = entry({ noise: randomBytes(1100).toString('base64') });
    expect(item.value?.S).toBeDefined();
    expect(item.valueGz).toBeUndefined();
  });

  it("carries the entry's mark in a few bytes, counted in its size: seq, ver and patches", () => {
    const mark = { seq: 12, version: '$LATEST:5c2b0e8f1a3d', patches: ['fraud-check'] };
    const plain = entry({ ok: true });
    const marked = journalEntryItem({ ...plainInput({ ok: true }), mark });
    expect(marked).toMatchObject({ seq: { N: '12' }, ver: { S: mark.version }, patches: { SS: ['fraud-check'] } });
    // the attribute names and values: 3 + 2, 3 + 20, 7 + 11 bytes
    expect(itemBytes(marked) - itemBytes(plain)).toBe(5 + 23 + 18);
  });
});

function plainInput(value: unknown) {
  return {
    jobId: 'order-1234567890-abcdef',
    incarnation: 'mbx3k2p4',
    kind: 'step' as const,
    name: 'reserve-stock',
    value,
    at: 0,
    expiresAt: 2e9,
  };
}
