import { checkout } from './checkout-jobs';

export default { jobs: [checkout('reordered')] };
