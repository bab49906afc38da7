/**
 * Runs a call as if it happened at `t` (epoch ms): `Date.now` answers `t` meanwhile. The chaos
 * checks' tests feed the observer log lines and answers with made-up times this way.
 */
export function atTime<T>(t: number, call: () => T): T {
  const realNow = Date.now;
  Date.now = () => t;
  try {
    return call();
  } finally {
    Date.now = realNow;
  }
}

/** A log line fed to a sink (the observer's) at `t0 + ms`, at level info. */
export function logAt(sink: (line: string) => void, t0: number) {
  return (ms: number, line: Record<string, unknown>): void =>
    atTime(t0 + ms, () => sink(JSON.stringify({ level: 'info', ...line })));
}
