/**
 * The job table's shape, defined once. The CDK construct and the local AWS harness
 * both build the table from {@link JOB_TABLE}, so the two can never drift.
 *
 * Key design (see docs/data-model.md): every index projects only attributes that never change
 * after they are written, so a write that changes a job's state touches no index entry.
 * - `pk` = `job#<id>`: one item per job, spread by id.
 * - GSI `byType`: `gsi1pk` = `<type>#<shard>`, `gsi1sk` = `<createdAt>#<id>`. Written once, at
 *   enqueue; lists a type's jobs newest first, and the supervisor sweeps it by creation minute.
 * - GSI `byTypeState` (sparse): `gsi2pk` = `<type>#<state>#<shard>`, sort key `gsi1sk`. Only
 *   jobs in a {@link SPARSE_STATES} state carry `gsi2pk`: it is written by the write that ends a
 *   job that way (never on the hot path), and lists e.g. the failed jobs of a type.
 * - `<shard>` = FNV-1a(id) mod {@link SHARD_COUNT}: no single key value takes more than
 *   1/SHARD_COUNT of a type's writes, so a busy type does not throttle one partition.
 *   Readers query every shard and merge by `createdAt`.
 * - `expiresAt` (epoch seconds) is the TTL attribute, set when a job finishes.
 * - GSI `byDue` (sparse): `dueBucket` = `due#<yyyymmddhhmm>#<shard>`, `dueAt` (epoch ms). Only
 *   jobs on a rare path carry it (far-future jobs, and jobs the supervisor found unfinished a
 *   while after their creation); an entry is never removed, only moved (see core/due.ts).
 */

/** Number of write shards per GSI key. Changing it needs a backfill of the GSI keys. */
export const SHARD_COUNT = 8;

export type KeyType = 'S' | 'N';

export interface IndexDefinition {
  name: string;
  partitionKey: string;
  sortKey: string;
  /** Non-key attributes copied into the index (INCLUDE projection). */
  include: string[];
}

export interface TableDefinition {
  partitionKey: string;
  attributes: Record<string, KeyType>;
  indexes: IndexDefinition[];
  ttlAttribute: string;
}

/**
 * What the listing indexes project: only attributes a job never changes, so an entry is written
 * once and no later write of the job touches it. Listing reads the rest of the summary from the
 * table (`DynamoJobIndex`: one BatchGetItem per page).
 */
export const BY_TYPE_INCLUDE = ['id', 'type', 'createdAt'];

/**
 * States that put a job in the sparse `byTypeState` index. The others are listed from `byType`
 * with the state read from the job items: indexing them would cost index writes on every job.
 */
export const SPARSE_STATES = ['failed', 'cancelled', 'expired'] as const;

/** Whether jobs in `state` carry a `byTypeState` entry. */
export function isSparseState(state: string): boolean {
  return (SPARSE_STATES as readonly string[]).includes(state);
}

export const JOB_TABLE: TableDefinition = {
  partitionKey: 'pk',
  attributes: { pk: 'S', gsi1pk: 'S', gsi1sk: 'S', gsi2pk: 'S', dueBucket: 'S', dueAt: 'N' },
  indexes: [
    { name: 'byType', partitionKey: 'gsi1pk', sortKey: 'gsi1sk', include: BY_TYPE_INCLUDE },
    // Sparse: only jobs in a SPARSE_STATES state carry gsi2pk.
    { name: 'byTypeState', partitionKey: 'gsi2pk', sortKey: 'gsi1sk', include: BY_TYPE_INCLUDE },
    // Sparse: only jobs on a rare path carry dueBucket (see core/due.ts).
    { name: 'byDue', partitionKey: 'dueBucket', sortKey: 'dueAt', include: ['id', 'type'] },
  ],
  ttlAttribute: 'expiresAt',
};

/** FNV-1a 32-bit hash of a string. Stable across processes and runtimes. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

export function shardOf(id: string): number {
  return fnv1a(id) % SHARD_COUNT;
}

export const keys = {
  job: (id: string) => `job#${id}`,
  byType: (type: string, id: string) => `${type}#${shardOf(id)}`,
  byTypeState: (type: string, state: string, id: string) => `${type}#${state}#${shardOf(id)}`,
  /** The `byType` / `byTypeState` partition of one shard, for readers that query every shard. */
  byTypeShard: (type: string, shard: number) => `${type}#${shard}`,
  byTypeStateShard: (type: string, state: string, shard: number) => `${type}#${state}#${shard}`,
  created: (createdAt: string, id: string) => `${createdAt}#${id}`,
};
