import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { CostRecorder } from '../core/metrics';
import { itemBytes } from './job-item';

/** DynamoDB operations that write, whose responses carry `ConsumedCapacity` when asked. */
export const WRITE_OPS: ReadonlySet<string> = new Set([
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
]);

interface RawCapacity {
  CapacityUnits?: number;
}

type Args = { input: Record<string, unknown> };
type HandlerContext = { commandName?: string };
type Next = (args: Args) => Promise<{ output: Record<string, unknown> }>;
type Stack = { add(middleware: (next: Next, context: HandlerContext) => Next, options: object): void };

/** Sum of `CapacityUnits` of a response's `ConsumedCapacity` (one entry, or one per table). */
function unitsOf(raw: RawCapacity | RawCapacity[] | undefined): number {
  if (!raw) return 0;
  return (Array.isArray(raw) ? raw : [raw]).reduce((sum, entry) => sum + (entry.CapacityUnits ?? 0), 0);
}

/**
 * Adds cost metering to an SDK client: every HTTP request it sends (SDK retries included) counts
 * as one request, and every DynamoDB write asks for `ReturnConsumedCapacity: TOTAL` (unless the
 * caller asked for more) and counts the write units DynamoDB reports. A conditional write that
 * DynamoDB refuses is billed too but reports nothing: it counts as the larger of 1 and the
 * existing item's size in KB when the refusal returned it (ALL_OLD), as AWS bills it (the same
 * estimate as bench/counting-middleware.ts). Costs go to `recorder`, which attributes them to
 * the job being handled (shared/lambda/cost-meter.ts).
 *
 * @example
 * meterCost(new DynamoDBClient({}), meter);
 */
export function meterCost<C extends { middlewareStack: unknown }>(client: C, recorder: CostRecorder): C {
  const stack = client.middlewareStack as Stack;
  stack.add(
    (next, context) => async (args) => {
      const operation = (context.commandName ?? '').replace(/Command$/, '');
      if (!WRITE_OPS.has(operation)) return next(args);
      const input = args.input.ReturnConsumedCapacity ? args.input : { ...args.input, ReturnConsumedCapacity: 'TOTAL' };
      try {
        const result = await next({ ...args, input });
        const units = unitsOf(result.output.ConsumedCapacity as RawCapacity | RawCapacity[] | undefined);
        if (units > 0) recorder.record({ requests: 0, writeUnits: units });
        return result;
      } catch (error) {
        if ((error as { name?: string }).name === 'ConditionalCheckFailedException') {
          const old = (error as { Item?: Record<string, AttributeValue> }).Item;
          recorder.record({ requests: 0, writeUnits: Math.max(1, Math.ceil((old ? itemBytes(old) : 0) / 1024)) });
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'orreryMeterWriteUnits', priority: 'low' },
  );
  stack.add(
    (next) => async (args) => {
      recorder.record({ requests: 1, writeUnits: 0 });
      return next(args);
    },
    { step: 'deserialize', name: 'orreryMeterRequests', priority: 'low' },
  );
  return client;
}
