/** DynamoDB attribute values, the way every adapter here writes them. */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export const S = (s: string): AttributeValue => ({ S: s });
export const N = (n: number): AttributeValue => ({ N: String(n) });
