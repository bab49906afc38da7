/**
 * The layers of the dashboard's flow graph (views/flow.tsx), apart from the view so the rule is
 * tested on its own (test/unit/flow-layers.test.ts).
 */

/** What placing a node reads: its id and its parents' ids. */
export interface LayerNode {
  id: string;
  dependsOn: readonly { id: string }[];
}

/**
 * The flow's nodes in layers: roots (no parent in the flow) first, each other node one layer after
 * its deepest parent in the flow. Within a layer, in the flow's order.
 * @example
 * layers(flow.nodes); // [[a], [b, c], [d]]
 */
export function layers<N extends LayerNode>(nodes: readonly N[]): N[][] {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const depth = new Map<string, number>();
  const depthOf = (node: N, path: Set<string>): number => {
    const known = depth.get(node.id);
    if (known !== undefined) return known;
    // a flow has no cycle (POST /flows refuses one); `path` (the nodes being placed, not every node
    // met: a parent two branches share is placed once and read back) only guards a malformed answer
    path.add(node.id);
    let d = 0;
    for (const edge of node.dependsOn) {
      const parent = byId.get(edge.id);
      if (parent && !path.has(parent.id)) d = Math.max(d, depthOf(parent, path) + 1);
    }
    path.delete(node.id);
    depth.set(node.id, d);
    return d;
  };
  const out: N[][] = [];
  for (const node of nodes) {
    const d = depthOf(node, new Set());
    const layer = out[d] ?? [];
    layer.push(node);
    out[d] = layer;
  }
  return out.filter((layer) => layer !== undefined);
}
