// Layout of a session DAG for the graph view (no vscode import): one row per node in seq order, one
// lane per chain (lanes are not reused). A node continues its parent's lane when it is the parent's first child; every further
// child (a fork: one predecessor with several children) or a spawn branch root opens a new lane, like a
// git history graph. The parent is the predecessor; a spawn branch root (predecessor null) hangs from its
// caller (the spawn_agent call).
import type { Call } from 'sessiondag-client';

export interface GraphNode {
  id: string;
  seq: number;
  lane: number;
  row: number;
  role: Call['role'];
  status: Call['status'];
  name: string;
  label: string;
  head: boolean;
  files: number;   // files the turn changed (its workspace checkpoint; else the watcher's list), on its user node
}

export interface GraphEdge { from: string; to: string; kind: 'chain' | 'fork' | 'spawn' }

export interface GraphLayout { nodes: GraphNode[]; edges: GraphEdge[]; lanes: number; rows: number }

/** How many files the turn a ROOT-level user node opened changed (0 for any other node). */
export function filesChanged(n: Call): number {
  if (n.role !== 'user' || n.caller !== 'ROOT') return 0;
  const md = (n.metadata ?? {}) as { checkpoint?: { changed?: number | null }; workspace_changes?: unknown[] };
  const changed = md.checkpoint?.changed;
  if (typeof changed === 'number') return changed;
  return Array.isArray(md.workspace_changes) ? md.workspace_changes.length : 0;
}

export function parentOf(n: Call): { id: string; kind: 'chain' | 'spawn' } | undefined {
  if (n.predecessor && n.predecessor !== 'ROOT') return { id: n.predecessor, kind: 'chain' };
  if (n.predecessor === null && n.caller && n.caller !== 'ROOT') return { id: n.caller, kind: 'spawn' };
  return undefined;
}

export function layoutGraph(input: Iterable<Call>, heads: Iterable<string> = []): GraphLayout {
  const byId = new Map<string, Call>();
  for (const n of input) byId.set(n.id, n);
  const nodes = [...byId.values()].sort((a, b) => a.seq - b.seq);
  const headSet = new Set(heads);
  const lane = new Map<string, number>();
  const takenChild = new Set<string>(); // parents whose lane was continued already
  const out: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  let lanes = 0;
  let rootTaken = false;
  nodes.forEach((n, row) => {
    const p = parentOf(n);
    const parentKnown = p && byId.has(p.id);
    let l: number;
    if (parentKnown && p!.kind === 'chain' && !takenChild.has(p!.id)) {
      l = lane.get(p!.id)!;
      takenChild.add(p!.id);
    } else if (!parentKnown && !rootTaken) {
      l = 0;
      rootTaken = true;
      lanes = Math.max(lanes, 1);
    } else {
      l = lanes++; // lanes are never reused: a later continuation of an older chain keeps its column free
    }
    lane.set(n.id, l);
    const text = typeof n.output === 'string' ? n.output : n.output == null ? '' : JSON.stringify(n.output);
    out.push({
      id: n.id, seq: n.seq, lane: l, row, role: n.role, status: n.status, name: n.name, head: headSet.has(n.id),
      files: filesChanged(n),
      label: `${n.role === 'user' && n.caller === 'ROOT' ? 'you' : n.name}: ${text.replace(/\s+/g, ' ').slice(0, 48)}`,
    });
    if (parentKnown) {
      const kind = p!.kind === 'spawn' ? 'spawn' : lane.get(p!.id) === l ? 'chain' : 'fork';
      edges.push({ from: p!.id, to: n.id, kind });
    }
  });
  return { nodes: out, edges, lanes: Math.max(lanes, out.length ? 1 : 0), rows: out.length };
}
