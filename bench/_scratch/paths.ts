import { startBenchAws } from '../local';
import { measurePaths } from '../paths';
const b = await startBenchAws();
try {
  const t = Date.now();
  const r = await measurePaths(b.aws, b.clock, 2);
  console.log(JSON.stringify(r, null, 1));
  console.log('ms', Date.now() - t);
} finally { await b.stop(); }
