/** DynamoDB attribute values, the way every adapter here writes them. */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type ItemKey, itemKey } from '../core/table';

export const S = (s: string): AttributeValue => ({ S: s });
export const N = (n: number): AttributeValue => ({ N: String(n) });

/**
 * The primary key attributes of an item (`pk`, `sk`): a key of {@link ItemKey}, or a partition
 * key alone, whose item has the constant sort key. The only place that spells the key's attributes.
 */
export function keyOf(key: string | ItemKey): Record<string, AttributeValue> {
  const { pk, sk } = typeof key === 'string' ? itemKey(key) : key;
  return { pk: S(pk), sk: S(sk) };
}
