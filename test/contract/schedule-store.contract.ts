/**
 * The contract of {@link ScheduleStore}, run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts): what a write stores is what a read returns,
 * including the audit of the latest change (`changedBy`), and a save is refused at a stale version.
 */
import { describe, expect, it } from 'vitest';
import type { Schedule } from '../../shared/schedules/model';
import type { SchedulePayload, ScheduleStore } from '../../shared/schedules/ports';

const AT = '2026-06-01T00:00:00.000Z';
const PAYLOAD: SchedulePayload = { payload: { report: 'daily' }, payloadHash: 'h1' };

export function scheduleStoreContract(fresh: () => Promise<ScheduleStore>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const scheduleNamed = (overrides: Partial<Schedule> = {}): Schedule => {
    seq += 1;
    return {
      name: `s-${run}-${seq}`,
      type: 'report',
      rate: '5 minutes',
      expression: 'rate(5 minutes)',
      timezone: 'UTC',
      anchorAt: Date.parse(AT),
      maxAttempts: 3,
      overlap: 'allow',
      state: 'enabled',
      payloadHash: 'h1',
      createdAt: AT,
      updatedAt: AT,
      version: 1,
      skipped: 0,
      missed: 0,
      nextFireAt: Date.parse(AT) + 300_000,
      ...overrides,
    };
  };

  describe('schedule store', () => {
    it('returns what create wrote, with who created it; a second create returns the first', async () => {
      const store = await fresh();
      const schedule = scheduleNamed({
        changedBy: { action: 'create', by: 'arn:aws:sts::123456789012:assumed-role/ops/alice', at: AT },
      });
      expect(await store.create(schedule, PAYLOAD)).toEqual({ created: true });
      const read = await store.get(schedule.name);
      expect(read).toMatchObject(schedule);
      expect(read?.changedBy).toEqual({
        action: 'create',
        by: 'arn:aws:sts::123456789012:assumed-role/ops/alice',
        at: AT,
      });
      expect(await store.getPayload(schedule.name)).toEqual(PAYLOAD);
      const again = await store.create({ ...schedule, changedBy: { action: 'create', by: 'other', at: AT } }, PAYLOAD);
      expect(again).toMatchObject({ created: false, existing: { changedBy: schedule.changedBy } });
    });

    it("keeps a schedule's run priority through create and save, and stores none for a schedule without one", async () => {
      const store = await fresh();
      const ranked = scheduleNamed({ priority: 7 });
      await store.create(ranked, PAYLOAD);
      expect((await store.get(ranked.name))?.priority).toBe(7);
      expect(await store.save({ ...ranked, priority: 0, version: 2 }, 1)).toBe(true);
      expect((await store.get(ranked.name))?.priority).toBe(0);
      const plain = scheduleNamed();
      await store.create(plain, PAYLOAD);
      expect(await store.get(plain.name)).not.toHaveProperty('priority');
    });

    it('replaces the latest change with the one saved at the version read, and keeps it through a save without one', async () => {
      const store = await fresh();
      const schedule = scheduleNamed({
        changedBy: { action: 'create', by: 'arn:aws:iam::123456789012:role/a', at: AT },
      });
      await store.create(schedule, PAYLOAD);
      const pausedAt = '2026-06-01T01:00:00.000Z';
      const paused: Schedule = {
        ...schedule,
        state: 'paused',
        version: 2,
        changedBy: { action: 'pause', by: 'arn:aws:iam::123456789012:role/oncall', at: pausedAt },
      };
      delete paused.nextFireAt;
      expect(await store.save(paused, 1)).toBe(true);
      expect((await store.get(schedule.name))?.changedBy).toEqual({
        action: 'pause',
        by: 'arn:aws:iam::123456789012:role/oncall',
        at: pausedAt,
      });
      // a fire's save carries the schedule read, changedBy included
      const read = (await store.get(schedule.name)) as Schedule;
      expect(await store.save({ ...read, version: 3, skipped: 1 }, 2)).toBe(true);
      expect(await store.get(schedule.name)).toMatchObject({ version: 3, skipped: 1, changedBy: paused.changedBy });
      // the listing returns it too
      const listed = await store.list({ limit: 100 });
      const found = listed.schedules.find((s) => s.name === schedule.name);
      expect(found?.changedBy).toEqual(paused.changedBy);
    });

    it('refuses a save at a stale version and keeps the change that won', async () => {
      const store = await fresh();
      const schedule = scheduleNamed({
        changedBy: { action: 'create', by: 'arn:aws:iam::123456789012:role/a', at: AT },
      });
      await store.create(schedule, PAYLOAD);
      const winner: Schedule = {
        ...schedule,
        version: 2,
        changedBy: { action: 'update', by: 'arn:aws:iam::123456789012:role/winner', at: AT },
      };
      expect(await store.save(winner, 1)).toBe(true);
      const loser: Schedule = {
        ...schedule,
        version: 2,
        changedBy: { action: 'pause', by: 'arn:aws:iam::123456789012:role/loser', at: AT },
      };
      expect(await store.save(loser, 1)).toBe(false);
      expect((await store.get(schedule.name))?.changedBy?.by).toBe('arn:aws:iam::123456789012:role/winner');
    });
  });
}
