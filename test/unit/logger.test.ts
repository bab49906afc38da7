import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, errorFields, type LogLevel } from '../../shared/logger';

function captured(level: LogLevel = 'debug') {
  const lines: { line: Record<string, unknown>; level: string }[] = [];
  const log = createLogger({ level, sink: (line, at) => lines.push({ line: JSON.parse(line), level: at }) });
  return { log, lines };
}

const context = {
  awsRequestId: 'req-1',
  functionName: 'orrery-echo',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:orrery-echo',
  memoryLimitInMB: '512',
} as Context;

describe('createLogger (Powertools Logger underneath)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes one JSON line per entry: level, time, message, then the fields', () => {
    const { log, lines } = captured();
    log.info('attempt started', { jobId: 'j1', attempt: 1 });
    expect(lines).toEqual([
      {
        level: 'info',
        line: { level: 'info', time: expect.any(String), message: 'attempt started', jobId: 'j1', attempt: 1 },
      },
    ]);
    expect(Object.keys(lines[0]?.line ?? {}).slice(0, 3)).toEqual(['level', 'time', 'message']);
    expect(Date.parse(String(lines[0]?.line.time))).not.toBeNaN();
  });

  it('a child adds its fields to every line, and children of one root do not share them', async () => {
    const { log, lines } = captured();
    const a = log.child({ type: 'echo' }).child({ jobId: 'a' });
    const b = log.child({ type: 'echo' }).child({ jobId: 'b' });
    // interleaved, as the concurrent records of a batch log
    await Promise.all([
      (async () => {
        a.info('one');
        await Promise.resolve();
        a.warn('two', { attempt: 2 });
      })(),
      (async () => {
        b.info('one');
        await Promise.resolve();
        b.error('two');
      })(),
    ]);
    expect(lines.map(({ line }) => [line.jobId, line.type, line.message, line.level])).toEqual([
      ['a', 'echo', 'one', 'info'],
      ['b', 'echo', 'one', 'info'],
      ['a', 'echo', 'two', 'warn'],
      ['b', 'echo', 'two', 'error'],
    ]);
    expect(lines[2]?.line.attempt).toBe(2);
  });

  it.each([
    ['debug', ['debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['warn', ['warn', 'error']],
    ['error', ['error']],
    ['silent', []],
  ] as const)('at level %s writes %j', (level, written) => {
    const { log, lines } = captured(level);
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(lines.map((l) => l.level)).toEqual(written);
    expect(lines.map((l) => l.line.level)).toEqual(written);
  });

  it('adds the invocation context (request id, cold start) once given', () => {
    const { log, lines } = captured();
    log.info('before');
    log.addContext(context);
    log.child({ jobId: 'j' }).info('after');
    expect(lines[0]?.line).not.toHaveProperty('requestId');
    expect(lines[1]?.line).toMatchObject({ requestId: 'req-1', coldStart: expect.any(Boolean), jobId: 'j' });
  });

  it('adds the X-Ray trace id when Lambda sets one', () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1');
    try {
      const { log, lines } = captured();
      log.info('traced');
      expect(lines[0]?.line.traceId).toBe('1-5759e988-bd862e3fe1be46a994272793');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('without a sink, writes through Powertools to stdout (info) and stderr (warn, error)', () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const log = createLogger({ level: 'info' }).child({ jobId: 'j' });
    log.info('to stdout');
    log.error('to stderr', errorFields(new Error('boom')));
    const stdout = out.mock.calls.map(([chunk]) => String(chunk));
    const stderr = err.mock.calls.map(([chunk]) => String(chunk));
    out.mockRestore();
    err.mockRestore();
    expect(stdout.map((line) => JSON.parse(line))).toEqual([
      { level: 'info', time: expect.any(String), message: 'to stdout', jobId: 'j' },
    ]);
    expect(JSON.parse(stderr[0] ?? '{}')).toMatchObject({
      level: 'error',
      message: 'to stderr',
      jobId: 'j',
      errorName: 'Error',
      errorMessage: 'boom',
    });
  });
});
