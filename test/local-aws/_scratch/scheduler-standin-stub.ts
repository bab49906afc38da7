// TEMPORARY stub used only until test/local-aws/scheduler-standin.ts lands. Not for commit.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type Clock, systemClock } from '../../../shared/core/clock';
type Fire = { scheduleArn: string; name: string; group: string; target: { Arn: string; RoleArn: string; Input?: string }; scheduledTime: number };
export async function startSchedulerStandIn(opts: { clock?: Clock; port?: number; deliver: (f: Fire) => Promise<void>; autoFire?: boolean }) {
  const clock = opts.clock ?? systemClock;
  const groups = new Set<string>(['default']);
  const schedules = new Map<string, { name: string; group: string; at: number; target: Fire['target'] }>();
  const server = createServer(async (req, res) => {
    let body = ''; for await (const c of req) body += c;
    const url = new URL(req.url ?? '/', 'http://x');
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const reply = (status: number, obj: unknown, type?: string) => { res.writeHead(status, { 'content-type': 'application/json', ...(type ? { 'x-amzn-errortype': type } : {}) }); res.end(JSON.stringify(obj)); };
    if (parts[0] === 'schedule-groups' && parts[1]) {
      if (req.method === 'POST') { if (groups.has(parts[1])) return reply(409, { Message: 'exists' }, 'ConflictException'); groups.add(parts[1]); return reply(200, { ScheduleGroupArn: `arn:aws:scheduler:us-east-1:000000000000:schedule-group/${parts[1]}` }); }
      if (req.method === 'DELETE') { if (!groups.delete(parts[1])) return reply(404, { Message: 'nf' }, 'ResourceNotFoundException'); return reply(200, {}); }
      if (req.method === 'GET') { if (!groups.has(parts[1])) return reply(404, { Message: 'nf' }, 'ResourceNotFoundException'); return reply(200, { Name: parts[1], State: 'ACTIVE' }); }
    }
    if (parts[0] === 'schedules' && parts[1] && req.method === 'POST') {
      const input = JSON.parse(body); const group = input.GroupName ?? 'default';
      const at = Date.parse(`${/at\((.*)\)/.exec(input.ScheduleExpression)?.[1]}Z`);
      schedules.set(`${group}/${parts[1]}`, { name: parts[1], group, at, target: input.Target });
      return reply(200, { ScheduleArn: `arn:aws:scheduler:us-east-1:000000000000:schedule/${group}/${parts[1]}` });
    }
    reply(404, { Message: 'unknown' }, 'UnknownOperationException');
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async fireDue() { let n = 0; for (const [k, s] of schedules) if (s.at <= clock.now()) { schedules.delete(k); await opts.deliver({ scheduleArn: k, name: s.name, group: s.group, target: s.target, scheduledTime: s.at }); n++; } return n; },
    list: () => [...schedules.values()],
    deleteDirectly: (name: string, group = 'default') => schedules.delete(`${group}/${name}`),
    stop: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }),
  };
}
export function sqsDeliverer(sqs: SQSClient) {
  return async (fire: Fire) => {
    const name = fire.target.Arn.split(':').pop() ?? '';
    const { GetQueueUrlCommand } = await import('@aws-sdk/client-sqs');
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: fire.target.Input ?? '' }));
  };
}
