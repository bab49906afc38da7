import { measureOverhead } from '../overhead';
const t = Date.now();
console.log(JSON.stringify(await measureOverhead(Number(process.argv[2] ?? 300), Number(process.argv[3] ?? 3)), null, 1));
console.log('ms', Date.now() - t);
