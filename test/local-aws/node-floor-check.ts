/**
 * Imported first by `orrery-jobs/testing` (testing.ts), for its side effect: on a Node older
 * than the floor, importing the testing kit throws `UnsupportedNodeError` (node-floor.ts), which names the
 * running version, the minimum and why, before anything else of the kit runs.
 *
 * This is enough because nothing the kit imports statically needs a newer Node: fauxqs (which
 * imports `node:sqlite`) is loaded by a dynamic `import()` in sqs.ts. A static import of it
 * would fail while the module graph is linked, before any module (this one included) runs.
 */
import { assertSupportedNode } from './node-floor';

assertSupportedNode();
