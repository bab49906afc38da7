/**
 * Counts and times every AWS call the platform makes, from inside the real SDK clients:
 * an `initialize` middleware sees each logical operation once (and asks DynamoDB for
 * `ReturnConsumedCapacity: INDEXES`), a `deserialize` middleware sees each HTTP attempt
 * (SDK retries included). Who made a call (API, worker, event source mapping) comes from an
 * AsyncLocalStorage set around the handler call, or from the client's default actor.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { SQSClient } from '@aws-sdk/client-sqs';
import { type AwsClients, createAwsClients } from '../shared/aws/clients';

export type Service = 'dynamodb' | 'sqs' | 'scheduler';

/** Write/read units of one DynamoDB call, as DynamoDB reported them (`ConsumedCapacity`). */
export interface Capacity {
  kind: 'read' | 'write';
  total: number;
  table: number;
  /** Units per global secondary index. */
  indexes: Record<string, number>;
}

export interface CallRecord {
  service: Service;
  /** Operation name without `Command`, e.g. `PutItem`. */
  operation: string;
  actor: string;
  /** `performance.now()` when `send` was called and when it settled. */
  start: number;
  end: number;
  /** HTTP attempts, SDK retries included. */
  attempts: number;
  ok: boolean;
  errorName?: string;
  capacity?: Capacity;
  /** ReceiveMessage: messages returned. */
  messages?: number;
  /** Batch calls: entries sent. */
  entries?: number;
}

/** Collects calls in the order they were issued. */
export class CallRecorder {
  readonly calls: CallRecord[] = [];

  /** A position to slice from later. */
  mark(): number {
    return this.calls.length;
  }

  since(mark: number): CallRecord[] {
    return this.calls.slice(mark);
  }
}

const actorStore = new AsyncLocalStorage<string>();

/** Runs `fn` with every AWS call inside it attributed to `actor`. */
export function asActor<T>(actor: string, fn: () => Promise<T>): Promise<T> {
  return actorStore.run(actor, fn);
}

const READ_OPS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const CAPACITY_OPS = new Set([
  ...READ_OPS,
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
]);

interface RawCapacity {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

function toCapacity(operation: string, raw: RawCapacity | RawCapacity[] | undefined): Capacity | undefined {
  if (!raw) return undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  const capacity: Capacity = { kind: READ_OPS.has(operation) ? 'read' : 'write', total: 0, table: 0, indexes: {} };
  for (const entry of list) {
    capacity.total += entry.CapacityUnits ?? 0;
    capacity.table += entry.Table?.CapacityUnits ?? 0;
    for (const [name, units] of Object.entries(entry.GlobalSecondaryIndexes ?? {})) {
      capacity.indexes[name] = (capacity.indexes[name] ?? 0) + (units.CapacityUnits ?? 0);
    }
  }
  return capacity;
}

type Args = { input: Record<string, unknown> };
type Context = { commandName?: string; [key: symbol]: unknown };
type Next = (args: Args) => Promise<{ output: Record<string, unknown> }>;
type Stack = { add(middleware: (next: Next, context: Context) => Next, options: object): void };

const RECORD = Symbol('benchCallRecord');

/** Adds the counting middleware to one client. `defaultActor` applies outside {@link asActor}. */
export function instrument<C extends { middlewareStack: unknown }>(
  client: C,
  service: Service,
  recorder: CallRecorder,
  defaultActor = 'other',
): C {
  const stack = client.middlewareStack as Stack;
  stack.add(
    (next, context) => async (args) => {
      const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      const record: CallRecord = {
        service,
        operation,
        actor: actorStore.getStore() ?? defaultActor,
        start: performance.now(),
        end: 0,
        attempts: 0,
        ok: false,
      };
      const entries = args.input.Entries;
      if (Array.isArray(entries)) record.entries = entries.length;
      context[RECORD] = record;
      recorder.calls.push(record);
      const input =
        service === 'dynamodb' && CAPACITY_OPS.has(operation)
          ? { ...args.input, ReturnConsumedCapacity: 'INDEXES' }
          : args.input;
      try {
        const result = await next({ ...args, input });
        record.ok = true;
        const capacity = toCapacity(operation, result.output.ConsumedCapacity as RawCapacity | undefined);
        if (capacity) record.capacity = capacity;
        if (operation === 'ReceiveMessage') record.messages = ((result.output.Messages as unknown[]) ?? []).length;
        return result;
      } catch (error) {
        record.errorName = (error as { name?: string }).name ?? 'Error';
        throw error;
      } finally {
        record.end = performance.now();
      }
    },
    { step: 'initialize', name: 'benchCountCalls', priority: 'high' },
  );
  stack.add(
    (next, context) => async (args) => {
      const record = context[RECORD] as CallRecord | undefined;
      if (record) record.attempts += 1;
      return next(args);
    },
    { step: 'deserialize', name: 'benchCountAttempts', priority: 'low' },
  );
  return client;
}

/**
 * The platform's clients (built as production builds them, from `AWS_ENDPOINT_URL_*`), counted.
 * Call after `aws.applyEnv()`.
 */
export function countedClients(recorder: CallRecorder, defaultActor = 'other'): AwsClients {
  const clients = createAwsClients();
  instrument(clients.dynamo, 'dynamodb', recorder, defaultActor);
  instrument(clients.sqs, 'sqs', recorder, defaultActor);
  instrument(clients.scheduler, 'scheduler', recorder, defaultActor);
  return clients;
}

/** The SQS client the emulated event source mapping polls with; its calls count as `esm`. */
export function countedEsmClient(recorder: CallRecorder): SQSClient {
  return instrument(new SQSClient({}), 'sqs', recorder, 'esm');
}

/** Longest chain of calls where each starts after the previous one ended: sequential round trips. */
export function sequentialDepth(calls: readonly CallRecord[]): number {
  const sorted = [...calls].sort((a, b) => a.end - b.end);
  let depth = 0;
  let lastEnd = Number.NEGATIVE_INFINITY;
  for (const call of sorted) {
    if (call.start >= lastEnd) {
      depth += 1;
      lastEnd = call.end;
    }
  }
  return depth;
}
