/**
 * `call`, or the abort's reason as soon as `signal` fires. The calls an attempt makes for its
 * handler (journal reads and writes, the parents' read) go through it: one slowed by the SDK's
 * retries must not hold an aborted handler past its heartbeat interval, since the lease runs out
 * after it and another attempt may start. The request itself is not recalled: a write already
 * sent may still land (a journal entry's first write wins, so a late one changes nothing a later
 * run relies on).
 *
 * @example
 * const entries = await untilAborted(journal.load(scope), ctx.signal);
 */
export function untilAborted<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    call.catch(() => {}); // its end no longer matters
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
