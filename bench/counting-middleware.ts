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
import { WRITE_OPS } from '../shared/aws/cost-middleware';

export type Service = 'dynamodb' | 'sqs' | 'scheduler' | 's3';

/** Write/read units of one DynamoDB call, as DynamoDB reported them (`ConsumedCapacity`). */
export interface Capacity {
  kind: 'read' | 'write';
  total: number;
  table: number;
  /** Units per global secondary index. */
  indexes: Record<string, number>;
  /**
   * Not reported by DynamoDB Local, so estimated the way AWS bills it: a refused conditional
   * write costs the larger of the existing and the new item's size (≥ 1 unit; estimated from the
   * existing item, ALL_OLD); a Query or Scan that finds nothing still costs the minimum read
   * (0.5 unit eventually consistent, 1 strongly). A transaction's writes are reported at half
   * what AWS bills (1 unit per KB per item, where AWS bills 2), so they are doubled and marked.
   */
  estimated?: boolean;
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
  /** DynamoDB single-item calls: the table, and the item's key (UpdateItem, DeleteItem) or the item put (PutItem). */
  table?: string;
  key?: Item;
  item?: Item;
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

/** The actor of the current async context, or `other`. */
export function currentActor(): string {
  return actorStore.getStore() ?? 'other';
}

/** Runs `fn` with every AWS call inside it attributed to `actor`. */
export function asActor<T>(actor: string, fn: () => Promise<T>): Promise<T> {
  return actorStore.run(actor, fn);
}

/** DynamoDB operations that read. */
export const READ_OPS: ReadonlySet<string> = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
const CAPACITY_OPS = new Set([...READ_OPS, ...WRITE_OPS]);

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

type Value = { S?: string; N?: string; B?: Uint8Array; M?: Item; L?: Value[]; SS?: string[]; NS?: string[] };
/** A DynamoDB item (or key) in the wire format. */
export type Item = Record<string, Value>;

/** An item's size as DynamoDB counts it: attribute names plus values (numbers ≈ digits / 2 + 1). */
export function itemBytes(item: Item): number {
  const value = (v: Value): number => {
    if (v.S !== undefined) return Buffer.byteLength(v.S);
    if (v.N !== undefined) return Math.ceil(v.N.replace(/[^0-9]/g, '').length / 2) + 1;
    if (v.B !== undefined) return v.B.length;
    if (v.M) return 3 + itemBytes(v.M);
    if (v.L) return 3 + v.L.reduce((sum, e) => sum + 1 + value(e), 0);
    if (v.SS) return v.SS.reduce((sum, e) => sum + Buffer.byteLength(e), 0);
    if (v.NS) return v.NS.reduce((sum, e) => sum + e.length / 2 + 1, 0);
    return 1;
  };
  return Object.entries(item).reduce((sum, [name, v]) => sum + Buffer.byteLength(name) + value(v), 0);
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
      if (service === 'dynamodb') {
        const { TableName, Key, Item: put } = args.input as { TableName?: unknown; Key?: Item; Item?: Item };
        if (typeof TableName === 'string') record.table = TableName;
        if (Key && (operation === 'UpdateItem' || operation === 'DeleteItem')) record.key = Key;
        if (put && operation === 'PutItem') record.item = put;
      }
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
        if (capacity && operation === 'TransactWriteItems') {
          // DynamoDB Local reports a transaction's items at 1 unit per KB; AWS bills 2 (a prepare
          // and a commit): the difference is estimated
          record.capacity = {
            ...capacity,
            total: capacity.total * 2,
            table: capacity.table * 2,
            indexes: Object.fromEntries(Object.entries(capacity.indexes).map(([k, v]) => [k, v * 2])),
            estimated: true,
          };
        } else if (capacity) record.capacity = capacity;
        if ((operation === 'Query' || operation === 'Scan') && !(capacity && capacity.total > 0)) {
          const units = input.ConsistentRead === true ? 1 : 0.5;
          const index = typeof input.IndexName === 'string' ? input.IndexName : undefined;
          record.capacity = {
            kind: 'read',
            total: units,
            table: index ? 0 : units,
            indexes: index ? { [index]: units } : {},
            estimated: true,
          };
        }
        if (operation === 'ReceiveMessage') record.messages = ((result.output.Messages as unknown[]) ?? []).length;
        return result;
      } catch (error) {
        record.errorName = (error as { name?: string }).name ?? 'Error';
        if (record.errorName === 'ConditionalCheckFailedException' && !READ_OPS.has(operation)) {
          const old = (error as { Item?: Item }).Item;
          const units = Math.max(1, Math.ceil((old ? itemBytes(old) : 0) / 1024));
          record.capacity = { kind: 'write', total: units, table: units, indexes: {}, estimated: true };
        }
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
  // the payload bucket's client (large payloads, results, step results): its PUTs and GETs per offloaded value
  if (clients.s3) instrument(clients.s3, 's3', recorder, defaultActor);
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
