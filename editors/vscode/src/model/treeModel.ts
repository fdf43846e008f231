// The sessions tree as data (no vscode import): sessions → branches → nodes, from session/list,
// session/list_branches and session/get_branch results. The view (sessionsView.ts) maps these to TreeItems.
import type { Branch, Call, SessionSummary } from 'sessiondag-client';

export interface NodeRow {
  kind: 'node';
  sessionId: string;
  branchHead: string;
  node: Call;
  label: string;
  description: string;
  icon: 'user' | 'llm' | 'code' | 'error' | 'running' | 'cancelled' | 'spawn' | 'summary';
  contextValue: string;
  tooltip: string;
}

export interface BranchRow {
  kind: 'branch';
  sessionId: string;
  branch: Branch;
  label: string;
  description: string;
  icon: 'main' | 'named' | 'spawn' | 'fork';
  contextValue: string;
}

/** The first row of a paged branch: older nodes not loaded yet (click: the next page). */
export interface OlderRow {
  kind: 'older';
  sessionId: string;
  branchHead: string;
  older: number;
  label: string;
  description: string;
}

export interface SessionRow {
  kind: 'session';
  sessionId: string;
  label: string;
  description: string;
  current: boolean;
}

export const shortId = (id: string): string => (id.length > 8 ? id.slice(0, 8) : id);

/** One line of text for a node's output (or input), at most `max` characters. */
export function preview(value: unknown, max = 60): string {
  let s: string;
  if (value === null || value === undefined) s = '';
  else if (typeof value === 'string') s = value;
  else {
    try { s = JSON.stringify(value); } catch { s = String(value); }
  }
  s = s.replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export function sessionRow(s: SessionSummary, currentId?: string): SessionRow {
  const parts: string[] = [];
  if (typeof s.created_at === 'number') parts.push(new Date(s.created_at * 1000).toISOString().slice(0, 16).replace('T', ' '));
  if (s.readable === false) parts.push('unreadable');
  return {
    // the title, as `sessions list` shows it (session/list reads it from session.json); the id below
    kind: 'session', sessionId: s.session_id, label: s.title || s.session_id, current: s.session_id === currentId,
    description: [s.session_id === currentId ? '● current' : '', ...parts, s.title ? s.session_id : ''].filter(Boolean).join(' · '),
  };
}

/** A usage total (session/usage) as text: dollars when every call has a price, "unknown" when none
 * has, "$X+?" when some have (X: what the priced ones cost); undefined for no calls. */
export interface UsageTotals { calls: number; cost_usd: number | null; priced_cost_usd: number }
export function costText(t: UsageTotals | undefined): string | undefined {
  if (!t || !t.calls) return undefined;
  if (typeof t.cost_usd === 'number') return `$${t.cost_usd.toFixed(4)}`;
  return t.priced_cost_usd ? `$${t.priced_cost_usd.toFixed(4)}+?` : 'unknown';
}

/** head id → cost text from session/usage rows (by branch: a branch's own spend since its fork, with
 * the sub-agents it started; by subagent: a spawn branch's). */
export function costsByHead(...rowSets: { head_id?: string | null; calls: number; cost_usd: number | null; priced_cost_usd: number }[][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rows of rowSets) {
    for (const r of rows) {
      const t = costText(r);
      if (r.head_id && t) out[r.head_id] = t;
    }
  }
  return out;
}

/** Branches sorted: current first, then main, named, forks and spawns by recency (seq); `costs`: head id → cost text. */
export function branchRows(sessionId: string, branches: Branch[], costs: Record<string, string> = {}): BranchRow[] {
  const rank = (b: Branch) => (b.current ? 0 : b.main ? 1 : b.name ? 2 : b.spawn_root ? 4 : 3);
  return [...branches].sort((a, b) => rank(a) - rank(b) || b.seq - a.seq).map((b) => {
    const icon: BranchRow['icon'] = b.main ? 'main' : b.spawn_root ? 'spawn' : b.name ? 'named' : 'fork';
    // the daemon's label (session/list_branches, the one `sessions branches` prints): the name, the first
    // differing message, "retry of turn N (…)", "failed try of turn N (…)"
    const label = b.main && b.name ? `${b.name} (main)` : b.label;
    const from = b.from_turn == null ? '' : b.from_turn === 0 ? 'from the start' : `from turn ${b.from_turn}`;
    const description = [b.current ? '● current' : '', b.status !== 'completed' ? b.status : '', from, `@${shortId(b.head_id)}`,
      costs[b.head_id] ?? ''].filter(Boolean).join(' · ');
    return {
      kind: 'branch', sessionId, branch: b, label, description, icon,
      contextValue: `branch${b.current ? '.current' : ''}${b.main ? '.main' : ''}`,
    };
  });
}

/** Node rows of one branch, in chain order (branch start → head). */
export function nodeRows(sessionId: string, branchHead: string, nodes: Call[]): NodeRow[] {
  return nodes.map((n) => {
    const text = n.role === 'code' && n.input !== undefined && n.input !== null && n.output === '' ? n.input : n.output;
    let icon: NodeRow['icon'] = n.role;
    if (n.status === 'error') icon = 'error';
    else if (n.status === 'running') icon = 'running';
    else if (n.status === 'cancelled') icon = 'cancelled';
    else if (n.name === 'spawn_agent') icon = 'spawn';
    else if (n.name === 'context/summary') icon = 'summary';
    const rootLevelUser = n.role === 'user' && n.caller === 'ROOT';
    return {
      kind: 'node', sessionId, branchHead, node: n, icon,
      label: `${n.role === 'user' ? (rootLevelUser ? 'you' : n.name) : n.name}: ${preview(text, 60)}`,
      description: `#${n.seq}${n.status !== 'completed' ? ` · ${n.status}` : ''}`,
      contextValue: `node.${n.role}${rootLevelUser ? '.turn' : ''}.${n.status}`,
      tooltip: `${n.role} ${n.name} · ${n.status} · ${n.id}\n\n${preview(text, 500)}`,
    };
  });
}

export function olderRow(sessionId: string, branchHead: string, older: number, pageSize: number): OlderRow {
  return {
    kind: 'older', sessionId, branchHead, older, label: `load older nodes… (${older} more)`,
    description: `next ${Math.min(older, pageSize)}`,
  };
}

/** Sessions newest first. */
export function sessionRows(sessions: SessionSummary[], currentId?: string): SessionRow[] {
  return [...sessions].sort((a, b) => (b.created_at ?? 0) - (a.created_at ?? 0) || a.session_id.localeCompare(b.session_id))
    .map((s) => sessionRow(s, currentId));
}

/** A branch across refreshes: its row's id has its head (so VS Code takes the row's collapsible state
 * afresh whenever a turn lands), but main and a spawn branch stay themselves as their heads move. */
export function branchKey(sessionId: string, b: Branch): string {
  return `${sessionId}\n${b.main ? 'main' : b.spawn_root ? `spawn ${b.spawn_root}` : `head ${b.head_id}`}`;
}

/** Which branch rows are open: the current branch is, and a branch stays as it was shown (or as the user
 * left it) when its head moves. Without it a branch that grows while not current closed under the user:
 * main after a pull that is no fast-forward (HEAD stays where the user is, so main is not current). */
export class BranchExpansion {
  private readonly open = new Map<string, boolean>();

  /** Is the row open? Remembered as shown. */
  shown(key: string, current: boolean): boolean {
    const open = current || (this.open.get(key) ?? false);
    this.open.set(key, open);
    return open;
  }

  /** The user opened or closed it. */
  set(key: string, open: boolean): void { this.open.set(key, open); }
}
