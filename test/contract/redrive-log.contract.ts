/**
 * The contract of {@link RedriveLog}, run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts): one record per job type, the latest redrive,
 * read back as written.
 */
import { describe, expect, it } from 'vitest';
import type { RedriveLog, RedriveRecord } from '../../shared/core/control-ports';

const AT = '2026-06-01T00:00:00.000Z';
const LATER = '2026-06-01T00:05:00.000Z';
const OPS = 'arn:aws:sts::123456789012:assumed-role/ops/alice';
const ONCALL = 'arn:aws:iam::123456789012:role/oncall';

export function redriveLogContract(fresh: () => Promise<RedriveLog>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  /** A job type of its own per case (the table is shared by the cases, and by earlier runs). */
  const typeNamed = () => {
    seq += 1;
    return `t-${run}-${seq}`;
  };

  describe('redrive log', () => {
    it('reads back what a redrive recorded, with or without a count; nothing for a type never redriven', async () => {
      const log = await fresh();
      const [moved, started, never] = [typeNamed(), typeNamed(), typeNamed()];
      const byHand: RedriveRecord = { type: moved, by: OPS, at: AT, method: 'receive-send', moved: 12 };
      const task: RedriveRecord = { type: started, by: ONCALL, at: AT, method: 'move-task' };
      expect(await log.record(byHand)).toBe(true);
      expect(await log.record(task)).toBe(true);
      expect(await log.last(moved)).toEqual(byHand);
      expect(await log.last(started)).toEqual(task);
      expect(await log.last(never)).toBeUndefined();
    });

    it('keeps one record per type: a later redrive replaces it, a count of 0 included', async () => {
      const log = await fresh();
      const type = typeNamed();
      await log.record({ type, by: OPS, at: AT, method: 'receive-send', moved: 3 });
      const later: RedriveRecord = { type, by: ONCALL, at: LATER, method: 'move-task' };
      expect(await log.record(later)).toBe(true);
      // the count of the first record is gone with it
      expect(await log.last(type)).toEqual(later);
      const zero: RedriveRecord = { type, by: OPS, at: LATER, method: 'receive-send', moved: 0 };
      expect(await log.record(zero)).toBe(true); // the same time: the last write wins
      expect(await log.last(type)).toEqual(zero);
    });

    it('keeps an earlier redrive out once a later one is stored (a slow write hides no newer redrive)', async () => {
      const log = await fresh();
      const type = typeNamed();
      const later: RedriveRecord = { type, by: ONCALL, at: LATER, method: 'receive-send', moved: 1 };
      await log.record(later);
      expect(await log.record({ type, by: OPS, at: AT, method: 'receive-send', moved: 9 })).toBe(false);
      expect(await log.last(type)).toEqual(later);
    });

    it('keeps a caller ARN as signed, whatever its length and characters', async () => {
      const log = await fresh();
      const type = typeNamed();
      const by = `arn:aws:sts::123456789012:assumed-role/${'r'.repeat(64)}/${'s@=,.-'.repeat(10)}`;
      await log.record({ type, by, at: AT, method: 'move-task' });
      expect((await log.last(type))?.by).toBe(by);
    });
  });
}
