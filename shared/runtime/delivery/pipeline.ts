import { randomUUID } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import { describeJob } from '../../core/describe';
import type { Job, JobMessage } from '../../core/job';
import { METRIC } from '../../core/metrics';
import type { ClaimResult } from '../../core/ports';
import { LeaseLostError } from '../../errors';
import { errorFields, type Logger } from '../../logger';
import {
  type Delivery,
  type Ending,
  type Gate,
  type GatePass,
  GO,
  GO_ON,
  type Outcome,
  type Verdict,
} from '../gates/gate';
import { hideUntil } from '../scheduling';
import { runAttempt } from './attempt';
import type { WorkerKit } from './kit';
import { giveBack, recordSkip } from './outcome';
import { parseRecord, receiveCountOf } from './parse';
import { onRefusedClaim } from './refused';

/**
 * One record's way through the worker: parse → gates before the claim → claim → gates after it
 * → attempt → outcome, and the gates' `finish` at the end (see ../gates/gate.ts). Returns the
 * record's handler: `'retry'` when the message must come back.
 */
export function createPipeline(kit: WorkerKit, gates: readonly Gate[]): (record: SQSRecord) => Promise<Outcome> {
  return async (record) => {
    const parsed = await parseRecord(kit, record);
    if (parsed.kind === 'answer') return parsed.outcome;
    const log = kit.log.child({ jobId: parsed.message.id, messageId: record.messageId });
    try {
      return await deliver(kit, gates, newDelivery(kit, parsed.message, record, log));
    } catch (error) {
      if (error instanceof LeaseLostError) {
        log.warn('late write rejected: the lease was taken over or the job changed', errorFields(error));
        return 'done';
      }
      log.error('could not process message; it will be delivered again', errorFields(error));
      return 'retry';
    }
  };
}

function newDelivery(kit: WorkerKit, message: JobMessage, record: SQSRecord, log: Logger): Delivery {
  let now: number | undefined;
  let read: Promise<Job | undefined> | undefined;
  const fixNow = () => {
    now ??= kit.clock.now();
    return now;
  };
  return {
    id: message.id,
    message,
    record,
    log,
    receiveCount: receiveCountOf(record),
    get now() {
      return fixNow();
    },
    job() {
      fixNow(); // before the read: what the gates read is never newer than their "now"
      read ??= kit.deps.store.get(message.id);
      return read;
    },
    stale() {
      read = undefined;
    },
  };
}

async function deliver(kit: WorkerKit, gates: readonly Gate[], d: Delivery): Promise<Outcome> {
  const passes = gates.map((gate) => gate.pass(d));
  // The passes whose hooks ran, until one `finish` is called: an error that escapes before the
  // attempt runs (a throttled claim, a take applied with its answer lost) tells them, since the
  // message it keeps may never come back (another receipt of it was deleted).
  let open = 0;
  try {
    return await throughGates(kit, passes, d, (n) => {
      open = n;
    });
  } catch (error) {
    if (open > 0) await finish(passes.slice(0, open), { kind: 'failed' }, 'retry').catch(() => 'retry');
    throw error;
  }
}

/** The gates, the claim and the attempt; `opened(n)`: the first `n` passes' hooks ran, and no `finish` yet (0: one was called). */
async function throughGates(
  kit: WorkerKit,
  passes: readonly GatePass[],
  d: Delivery,
  opened: (n: number) => void,
): Promise<Outcome> {
  for (const [i, pass] of passes.entries()) {
    opened(i + 1);
    const stop = await settle(kit, d, (await pass.beforeClaim?.()) ?? GO);
    if (stop !== undefined) {
      opened(0);
      return await finish(passes.slice(0, i), { kind: 'stopped' }, stop);
    }
  }
  // Unique per claim: an SDK retry of a claim whose response was lost finds its own lease,
  // and the writes that end the attempt are told apart from any other worker's.
  const claimOwner = `${kit.owner}:${randomUUID().slice(0, 8)}`;
  const claim = await kit.deps.store.claim({
    id: d.id,
    type: kit.type,
    owner: claimOwner,
    now: d.now,
    leaseMs: kit.leaseMs,
    attemptTimeoutMs: kit.def.spec.timeoutMs,
    messageId: d.record.messageId,
  });
  if (claim.kind !== 'claimed') {
    kit.noCall(d.record);
    const at = { record: d.record, log: d.log, claimOwner, receiveCount: d.receiveCount };
    const outcome = await onRefusedClaim(kit, claim, at);
    opened(0);
    return await finish(passes, { kind: 'refused', claim }, outcome);
  }
  const job = claim.job;
  for (const pass of passes) {
    const after = (await pass.afterClaim?.(job)) ?? GO_ON;
    if (after.kind === 'go') continue;
    kit.noCall(d.record);
    const at = kit.clock.now();
    await giveBack(kit, job, after.runAt, claimOwner, d.log, after.what);
    // the slots taken for it go on meanwhile
    opened(0);
    await finish(passes, { kind: 'given-back', job }, 'done');
    if (after.hideUntil === undefined) return 'done';
    return await hideUntil({ ...hiding(kit, d), until: after.hideUntil, now: at });
  }
  opened(0);
  let outcome: Outcome = 'retry';
  try {
    outcome = await runClaimed(kit, claim, d);
  } finally {
    // Once the attempt is over (or its delivery failed), the gates give back what it held.
    outcome = await finish(passes, { kind: 'ran', job, ended: outcome === 'done' }, outcome);
  }
  return outcome;
}

/** Runs the claimed attempt, with the metrics and the log line of its start. */
async function runClaimed(kit: WorkerKit, claim: Extract<ClaimResult, { kind: 'claimed' }>, d: Delivery) {
  const started = Date.parse(claim.job.startedAt ?? claim.job.updatedAt);
  kit.metrics.add(METRIC.started, kit.type);
  // from due (enqueued, or its delay or backoff over) to start; a claim may come up to 1 s early
  kit.metrics.add(METRIC.queueDelay, kit.type, Math.max(0, started - Date.parse(claim.job.runAt)));
  const log = d.log.child({ attempt: claim.job.attempts });
  log.info('attempt started', { token: claim.job.leaseToken, ...describeJob(kit.def.spec, claim.job.payload) });
  return await runAttempt(kit, claim.job, d.record, log);
}

const hiding = (kit: WorkerKit, d: Delivery) => ({
  queue: kit.deps.queue,
  queueUrl: kit.route.queueUrl,
  record: d.record,
  log: d.log,
});

/** Acts on a gate's verdict before the claim: undefined to go on, else the delivery's outcome. */
async function settle(kit: WorkerKit, d: Delivery, verdict: Verdict): Promise<Outcome | undefined> {
  // every verdict but `go` and a refused skip stops the delivery
  if (verdict.kind !== 'go' && verdict.kind !== 'skip') kit.noCall(d.record);
  switch (verdict.kind) {
    case 'go':
      return undefined;
    case 'later':
      return await hideUntil({ ...hiding(kit, d), until: verdict.until, now: kit.clock.now() });
    case 'wait':
      d.log.info(verdict.why, verdict.fields ?? {});
      return 'done';
    case 'answer':
      return verdict.outcome;
    case 'skip': {
      const { job, reason, beforeSeq } = verdict;
      if (await recordSkip(kit, { job, reason, ...(beforeSeq === undefined ? {} : { beforeSeq }) }, d.log)) {
        kit.noCall(d.record);
        d.log.info(verdict.note, verdict.fields ?? {});
        await kit.releaseAfterEnd(job.id, d.log);
        return 'done';
      }
      if (verdict.ifRefused === 'done') {
        kit.noCall(d.record);
        d.log.info('job changed before it could be skipped; nothing to do');
        return 'done';
      }
      d.stale(); // refused: the job changed since the read: the next gates read it again
      return undefined;
    }
  }
}

/** Each pass's `finish`, last gate first; a pass that answers `'retry'` keeps the message. */
async function finish(passes: readonly GatePass[], ending: Ending, outcome: Outcome): Promise<Outcome> {
  let out = outcome;
  for (const pass of [...passes].reverse()) {
    if ((await pass.finish?.(ending)) === 'retry') out = 'retry';
  }
  return out;
}
