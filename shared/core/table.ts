/**
 * The job table's shape, defined once. The CDK construct and the local AWS harness
 * both build the table from {@link JOB_TABLE}, so the two can never drift.
 *
 * Key design (see docs/data-model.md): every index projects only attributes that never change
 * after they are written, so a write that changes a job's state touches no index entry.
 * - `pk` = `job#<id>`, `sk` = {@link SINGLE_SK}: one status item per job, spread by id. Every item
 *   is keyed by `pk` and `sk` (see {@link itemKey}); all but a job's journal entries and inbox
 *   signals are alone under their `pk`, with the constant sort key {@link SINGLE_SK}.
 * - Items a job owns (its journal, inbox, error items, payload item, parents item, registry of
 *   children) are keyed by the job's **incarnation** too ({@link owned}): a job that later takes
 *   the same id (once this one is past its retention) reads none of them.
 * - A job incarnation's journal entries share one partition key ({@link journalKey}), so a resume
 *   reads them all with one Query (1 MB a page) instead of one GetItem per entry.
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
  sortKey: string;
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
 * A `held` job is indexed as a failed one is (the same attempt-ending write sets `gsi2pk`): an
 * operator lists the held jobs of a type with one query, however many jobs the type ran.
 */
export const SPARSE_STATES = ['held', 'failed', 'cancelled', 'expired'] as const;

/** Whether jobs in `state` carry a `byTypeState` entry. */
export function isSparseState(state: string): boolean {
  return (SPARSE_STATES as readonly string[]).includes(state);
}

export const JOB_TABLE: TableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  attributes: { pk: 'S', sk: 'S', gsi1pk: 'S', gsi1sk: 'S', gsi2pk: 'S', dueBucket: 'S', dueAt: 'N' },
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
  /** The partition key of a job's status item (its sort key is {@link SINGLE_SK}). */
  job: (id: string) => `job#${id}`,
  byType: (type: string, id: string) => `${type}#${shardOf(id)}`,
  byTypeState: (type: string, state: string, id: string) => `${type}#${state}#${shardOf(id)}`,
  /** The `byType` / `byTypeState` partition of one shard, for readers that query every shard. */
  byTypeShard: (type: string, shard: number) => `${type}#${shard}`,
  byTypeStateShard: (type: string, state: string, shard: number) => `${type}#${state}#${shard}`,
  created: (createdAt: string, id: string) => `${createdAt}#${id}`,
};

/**
 * The version of the data model items are written in. 1 was the table keyed by `pk` alone; 2 (this
 * one) added the sort key `sk` and the incarnation in the keys of the items a job owns. Items carry
 * no version attribute: the rule for the next version is in docs/data-model.md ("Versions"): a
 * change a reader of version 2 cannot read writes `v` = 3 on the items it changes, and its readers
 * take an item without `v` as version 2.
 */
export const DATA_MODEL_VERSION = 2;

/** The sort key of every item that is alone under its partition key (all but journal and inbox entries). */
export const SINGLE_SK = '-';

/** The primary key of an item: its partition key and its sort key. */
export interface ItemKey {
  pk: string;
  sk: string;
}

/** The key of an item alone under `pk` (the constant sort key {@link SINGLE_SK}). */
export function itemKey(pk: string, sk: string = SINGLE_SK): ItemKey {
  return { pk, sk };
}

/**
 * The incarnation of a job id: its status item's `createdAt`, as epoch ms in base 36 (8
 * characters until the year 2059). It names the items a job owns, so that a later job of the same
 * id reads none of them. It is unique per incarnation: an id is taken again only when its job
 * has finished and is past its retention (the create's condition `expiresAt < :createdAt`), and
 * `expiresAt` is at least a day after the job's finish (`retentionDays` ≥ 1), so the new job's
 * `createdAt` is more than a day after the old one's, whatever the clocks of two API instances
 * disagree by within that day. A job's `createdAt` is never rewritten: its retries, operator
 * retries and resumes keep the incarnation, hence the journal.
 */
export function incarnationOf(createdAt: string): string {
  const ms = Date.parse(createdAt);
  if (!Number.isFinite(ms)) throw new Error(`not a job's createdAt: ${JSON.stringify(createdAt)}`);
  return ms.toString(36);
}

/**
 * The `createdAt` of an incarnation: the inverse of {@link incarnationOf}, exact because a job's
 * `createdAt` is always written as `Date.prototype.toISOString()` (a registry entry keeps the
 * 8-character incarnation, and the release's condition compares the child's `createdAt`).
 */
export function createdAtOf(incarnation: string): string {
  const ms = Number.parseInt(incarnation, 36);
  if (!Number.isFinite(ms) || ms.toString(36) !== incarnation) {
    throw new Error(`not an incarnation: ${JSON.stringify(incarnation)}`);
  }
  return new Date(ms).toISOString();
}

/** The partition key of an item owned by one incarnation of a job: `job#<id>#<incarnation>#<part>`. */
export function owned(id: string, incarnation: string, part: string): string {
  return `job#${id}#${incarnation}#${part}`;
}
