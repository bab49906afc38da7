import { it, inject } from 'vitest';
it('waits', async () => { console.log('PID', inject('dynamodbPid')); await new Promise((r) => setTimeout(r, 30_000)); }, 60_000);
