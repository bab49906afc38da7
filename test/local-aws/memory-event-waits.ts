/** An in-memory {@link EventWaits}, held to the same contract as DynamoEventWaits (test/contract/event-waits.contract.ts). */
import {
  type EventWaiter,
  type EventWaits,
  firstSentSince,
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
    const sent = [...this.partition(key)].filter(([sk]) => sk.startsWith('sent#')).map(([, i]) => i.value as SentEvent);
    const first = firstSentSince(sent, since);
    return first === undefined ? undefined : copy(first);
  }

  async recordSent(key: string, event: SentEvent, expiresAt: number): Promise<SentEvent> {
    this.calls.push({ method: 'recordSent', key });
    const sk = sentKey(key, event).sk;
    const first = this.partition(key).get(sk);
    if (first) return copy(first.value as SentEvent);
    this.partition(key).set(sk, { value: copy(event), expiresAt });
    return copy(event);
  }

  async waiters(key: string, nowSeconds: number): Promise<EventWaiter[]> {
    this.calls.push({ method: 'waiters', key });
    return [...this.partition(key)]
      .filter(([sk, item]) => sk.startsWith('wait#') && item.expiresAt >= nowSeconds)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, item]) => copy(item.value as EventWaiter));
  }
}
