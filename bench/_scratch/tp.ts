import { startBenchAws } from '../local';
import { measureThroughput } from '../throughput';
const b = await startBenchAws();
try {
  const t = Date.now();
  console.log(await measureThroughput(b.aws, Number(process.argv[2] ?? 300), [1, 4, 16]));
  console.log('ms', Date.now() - t);
} finally { await b.stop(); }
