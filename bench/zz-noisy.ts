import { startBenchAws } from './local';
import { measureNoisyNeighbour } from './noisy-neighbour';
const n = Number(process.argv[2] ?? 2000);
const q = Number(process.argv[3] ?? 20);
const bench = await startBenchAws();
try {
  const r = await measureNoisyNeighbour(bench.aws, n, q);
  console.log(JSON.stringify(r, null, 1));
} finally {
  await bench.stop();
}
