/**
 * The dashboard's flow graph (ui/src/flow-layers.ts, drawn by ui/src/views/flow.tsx): `layers`
 * puts each job one layer right of its deepest parent in the flow, whatever the order
 * `POST /flows` listed the jobs in (a flow's jobs may name parents listed after them).
 */
import { describe, expect, it } from 'vitest';
import { type LayerNode, layers } from '../../ui/src/flow-layers';

type Node = LayerNode & { type: string; state: string; children: string[] };

const node = (id: string, parents: string[] = []): Node => ({
  id,
  type: 'echo',
  state: 'succeeded',
  dependsOn: parents.map((parent) => ({ id: parent, onParentFailure: 'fail' })),
  children: [],
});

const ids = (out: Node[][]) => out.map((layer) => layer.map((n) => n.id));

describe('flow graph layers', () => {
  it('places a diamond listed parents first in three layers', () => {
    const out = layers([node('a'), node('b', ['a']), node('c', ['a']), node('d', ['b', 'c'])]);
    expect(ids(out)).toEqual([['a'], ['b', 'c'], ['d']]);
  });

  it('places a diamond listed children first in the same three layers', () => {
    // d first: the walk from d reaches a through b, then must still place c one layer after a
    const out = layers([node('d', ['b', 'c']), node('b', ['a']), node('c', ['a']), node('a')]);
    expect(ids(out)).toEqual([['a'], ['b', 'c'], ['d']]);
  });

  it('ends on a malformed answer with a cycle, each node placed once', () => {
    const out = layers([node('a', ['b']), node('b', ['a'])]);
    expect(
      out
        .flat()
        .map((n) => n.id)
        .sort(),
    ).toEqual(['a', 'b']);
  });
});
