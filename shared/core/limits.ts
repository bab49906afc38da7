/**
 * Sizes, delays and the job id pattern the API, the worker and the CLI enforce. Apart from
 * ./enqueue.ts (which re-exports them) so that the worker and the CLI, which need only these, do
 * not build the enqueue request schema (nor bundle zod).
 */

/** Job ids: letters, digits, `_`, `-`, `.`; 1–64 chars; also used as Scheduler schedule names. */
export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Largest payload, as UTF-8 JSON. The payload is stored in the job's DynamoDB item
 * (400 KB item limit) next to a result of up to {@link MAX_RESULT_BYTES} and the error history;
 * SQS messages carry only ids, so the SQS limit (1 MiB) is never the binding one.
 */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** Largest handler result kept on the job. */
export const MAX_RESULT_BYTES = 64 * 1024;
/** Largest request body the API reads: a maximal payload plus room for the other fields. */
export const MAX_REQUEST_BYTES = MAX_PAYLOAD_BYTES + 4 * 1024;

/** Longest delay SQS can hold a message (`DelaySeconds`). Later jobs go through Scheduler. */
export const SQS_MAX_DELAY_SECONDS = 900;

/** UTF-8 size of a value's JSON text. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}
