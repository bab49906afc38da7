/** An in-memory {@link EventWaits}, held to the same contract as DynamoEventWaits (test/contract/event-waits.contract.ts). */
import {
  type EventWaiter,
  type EventWaits,
  matchPartition,
  type SentEvent,
  sentKey,
  waiterKey,
} from '../../shared/core/event-waits';

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export class FakeEventWaits implements EventWaits {
  /** Items by partition, then by sort key, as the table holds them. */
  private readonly partitions = new Map<string, Map<string, { value: EventWaiter | SentEvent; expiresAt: number }>>();
  /** Every call, in order. */
  readonly calls: { method: 'register' | 'firstSince' | 'recordSent' | 'waiters'; key: string }[] = [];

  private partition(key: string) {
    const pk = matchPartition(key);
    const items = this.partitions.get(pk) ?? new Map();
    this.partitions.set(pk, items);
    return items;
  }

  async register(key: string, waiter: EventWaiter, expiresAt: number): Promise<void> {
    this.calls.push({ method: 'register', key });
    this.partition(key).set(waiterKey(key, waiter).sk, { value: copy(waiter), expiresAt });
  }

  async firstSince(key: string, since: string): Promise<SentEvent | undefined> {
    this.calls.push({ method: 'firstSince', key });
    const from = `sent#${since}`;
    const sks = [...this.partition(key).keys()].filter((sk) => sk.startsWith('sent#') && sk >= from).sort();
    const first = sks[0];
    return first === undefined ? undefined : copy(this.partition(key).get(first)?.value as SentEvent);
  }

  async recordSent(key: string, event: SentEvent, expiresAt: number): Promise<void> {
    this.calls.push({ method: 'recordSent', key });
    this.partition(key).set(sentKey(key, event).sk, { value: copy(event), expiresAt });
  }

  async waiters(key: string, nowSeconds: number): Promise<EventWaiter[]> {
    this.calls.push({ method: 'waiters', key });
    return [...this.partition(key)]
      .filter(([sk, item]) => sk.startsWith('wait#') && item.expiresAt >= nowSeconds)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, item]) => copy(item.value as EventWaiter));
  }
}
