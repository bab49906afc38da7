import type { SQSRecord } from 'aws-lambda';
import { ATTEMPT_MARGIN_MS } from '../../core/due';
import { appendError, describeError } from '../../core/job';
import type { ClaimResult } from '../../core/ports';
import type { Logger } from '../../logger';
import type { Outcome } from '../gates/gate';
import { expireJob, waitUntilDue } from '../scheduling';
import { backIfSignalled } from './defer';
import { lookAgainAtInvoked } from './invoke-wait';
import type { WorkerKit } from './kit';
import { finalFailure } from './outcome';

/** Receives of an attempt's own message hidden only until its lease fence; later ones wait for the attempt's deadline. */
const OWN_MESSAGE_FENCE_RETURNS = 3;

/**
 * What a delivery whose claim was refused does with its message: each refusal (see
 * `classifyRefusedClaim` in core/lease.ts) says whether the job is gone, finished, waiting for
 * its parents, running under a live lease, not due yet, past its deadline, or out of attempts.
 */
export async function onRefusedClaim(
  kit: WorkerKit,
  claim: Exclude<ClaimResult, { kind: 'claimed' }>,
  at: { record: SQSRecord; log: Logger; claimOwner: string; receiveCount: number },
): Promise<Outcome> {
  const { record, log } = at;
  const { queue, store } = kit.deps;
  const waitFor = { queue, queueUrl: kit.route.queueUrl, record, log };
  const release = kit.release;
  switch (claim.kind) {
    case 'missing':
      log.warn('no job for this message (expired or never written); discarding it');
      return 'done';
    case 'finished':
      if (release?.pending(claim.job)) return (await release.afterEnd(claim.job.id, log)) ? 'done' : 'retry';
      log.info('duplicate delivery of a finished job; discarding it', { state: claim.job.state });
      return 'done';
    case 'blocked':
      // A job that waits for the jobs it invoked, whose worker died (or failed) before its look
      // at the children that ended before its wait: look now (the message was kept for this).
      if (claim.job.waitingFor?.kind === 'invoke') return await lookAgainAtInvoked(kit, claim.job, log);
      // its parents' release sends it a message of its own once none is left to wait for
      log.info('job waits for its parents; discarding this message', { pendingParents: claim.job.pendingParents });
      return 'done';
    case 'busy': {
      // The attempt's own message, back while its lease may be held (its worker died, or
      // gave up its lease): keep it, hidden until the lease may be taken over. Any other copy
      // is deleted, not bounced: a long job's duplicates would otherwise walk into the DLQ.
      if (claim.job.leaseMessage !== record.messageId) {
        log.info('duplicate delivery of a job running under a live lease; discarding it');
        return 'done';
      }
      // Until the lease may be taken over (a dead worker's job resumes then); after a few
      // such returns, until the attempt must have ended (its Lambda timed out): a live
      // attempt keeps renewing its lease, and each return counts toward maxReceiveCount.
      const claimedAt = Date.parse(claim.job.startedAt ?? claim.job.updatedAt);
      const deadline = claimedAt + kit.def.spec.timeoutMs + ATTEMPT_MARGIN_MS;
      const notBefore = at.receiveCount > OWN_MESSAGE_FENCE_RETURNS ? deadline : undefined;
      return await waitUntilDue({
        ...waitFor,
        job: claim.job,
        now: kit.clock.now(),
        ...(notBefore ? { notBefore } : {}),
      });
    }
    case 'early':
    case 'fenced': {
      // A job that waits for a signal whose wake was lost (its sender, or the worker that
      // suspended it, died between the two writes): its signal is in its inbox; wake it now.
      const waiting = claim.job;
      if (
        claim.kind === 'early' &&
        waiting.state === 'waiting' &&
        waiting.waitSignal !== undefined &&
        (await backIfSignalled(kit, waiting, waiting.waitSignal, record, log))
      )
        return 'retry';
      // Not due yet, or an earlier attempt (cancelled, then retried) may still be running.
      return await waitUntilDue({ ...waitFor, job: claim.job, now: kit.clock.now() });
    }
    case 'past-deadline':
      await expireJob({ job: claim.job, now: kit.clock.now(), expiresAt: kit.expiresAt(kit.clock.now()), store, log });
      await kit.releaseAfterEnd(claim.job.id, log);
      return 'done';
    case 'exhausted': {
      const job = claim.job;
      const err = new Error('the last attempt stopped without recording a result (lease expired)');
      const errors = appendError(job.errors, describeError(err, job.attempts, kit.clock.now(), 'lease_expired'));
      await finalFailure(kit, job, errors, at.claimOwner, log);
      return 'done';
    }
  }
}
