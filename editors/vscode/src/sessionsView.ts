// The Sessions view: sessions bound to this folder → branches → nodes, refreshed live on
// session/did_change (any writer: this window, another client, a `sessiondag run` in a terminal).
import * as vscode from 'vscode';
import type { Call, SessionDagClient } from 'sessiondag-client';
import { BranchRow, NodeRow, SessionRow, branchRows, nodeRows, sessionRows } from './model/treeModel';
import type { Sessions } from './sessions';
import { activatedAt, timing } from './timing';

export type Row = SessionRow | BranchRow | NodeRow;

const ICONS: Record<string, [string, string?]> = {
  user: ['account'], llm: ['hubot'], code: ['tools'], error: ['error', 'errorForeground'],
  running: ['loading~spin'], cancelled: ['circle-slash', 'disabledForeground'], spawn: ['type-hierarchy-sub'],
  summary: ['fold'], main: ['git-branch'], named: ['tag'], fork: ['git-compare'],
};

function icon(name: string): vscode.ThemeIcon {
  const [id, color] = ICONS[name] ?? ['circle-outline'];
  return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

export class SessionsView implements vscode.TreeDataProvider<Row>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Row | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private sessionCache?: SessionRow[];
  private readonly branchCache = new Map<string, BranchRow[]>();
  private readonly nodeCache = new Map<string, NodeRow[]>();
  private readonly parents = new Map<Row, Row>();
  private timer?: NodeJS.Timeout;
  private populated = false;

  constructor(private readonly sessions: Sessions) {}

  /** Drop what is cached for one session (or all) and redraw soon (coalesces bursts of changes). */
  invalidate(sessionId?: string): void {
    if (sessionId === undefined) {
      this.sessionCache = undefined;
      this.branchCache.clear();
      this.nodeCache.clear();
    } else {
      this.branchCache.delete(sessionId);
      for (const k of [...this.nodeCache.keys()]) if (k.startsWith(`${sessionId}\n`)) this.nodeCache.delete(k);
      this.sessionCache = undefined;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = undefined; this.parents.clear(); this.changed.fire(undefined); }, 30);
  }

  getTreeItem(r: Row): vscode.TreeItem {
    if (r.kind === 'session') {
      const it = new vscode.TreeItem(r.label, r.current ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
      it.id = `s:${r.sessionId}`;
      it.description = r.description;
      it.iconPath = new vscode.ThemeIcon(r.current ? 'comment-discussion' : 'history');
      it.contextValue = 'session';
      it.command = { command: 'sessiondag.openSession', title: 'Open', arguments: [r] };
      return it;
    }
    if (r.kind === 'branch') {
      const it = new vscode.TreeItem(r.label, r.branch.current ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
      it.id = `b:${r.sessionId}:${r.branch.head_id}`;
      it.description = r.description;
      it.iconPath = icon(r.icon);
      it.contextValue = r.contextValue;
      return it;
    }
    const it = new vscode.TreeItem(r.label, vscode.TreeItemCollapsibleState.None);
    it.id = `n:${r.sessionId}:${r.branchHead}:${r.node.id}`;
    it.description = r.description;
    it.tooltip = r.tooltip;
    it.iconPath = icon(r.icon);
    it.contextValue = r.contextValue;
    it.command = { command: 'sessiondag.selectNode', title: 'Show in Chat', arguments: [r] };
    return it;
  }

  getParent(r: Row): Row | undefined { return this.parents.get(r); }

  async getChildren(r?: Row): Promise<Row[]> {
    const c = await this.sessions.client();
    if (!r) {
      const rows = this.sessionCache ?? (this.sessionCache = sessionRows(await this.sessions.list(), this.sessions.currentId));
      if (!this.populated) {
        this.populated = true;
        timing('tree-populated', { ms: Date.now() - activatedAt, sessions: rows.length });
      }
      return rows;
    }
    if (r.kind === 'session') {
      let rows = this.branchCache.get(r.sessionId);
      if (!rows) {
        const res = await c.sessionListBranches({ session_id: r.sessionId });
        rows = branchRows(r.sessionId, res.branches);
        this.branchCache.set(r.sessionId, rows);
      }
      for (const x of rows) this.parents.set(x, r);
      return rows;
    }
    if (r.kind === 'branch') {
      const rows = await this.branchNodes(c, r);
      for (const x of rows) this.parents.set(x, r);
      return rows;
    }
    return [];
  }

  private async branchNodes(c: SessionDagClient, r: BranchRow): Promise<NodeRow[]> {
    const key = `${r.sessionId}\n${r.branch.head_id}`;
    let rows = this.nodeCache.get(key);
    if (!rows) {
      const t0 = Date.now();
      const nodes: Call[] = (await c.sessionGetBranch({ session_id: r.sessionId, head_id: r.branch.head_id })).nodes;
      rows = nodeRows(r.sessionId, r.branch.head_id, nodes.filter((n) => n.name !== 'context/system_prompt'));
      this.nodeCache.set(key, rows);
      timing('branch-nodes', { nodes: rows.length, ms: Date.now() - t0 });
    }
    return rows;
  }

  /** The row of a node (current branch first), for revealing it in the tree. */
  async findNode(sessionId: string, nodeId: string): Promise<NodeRow | undefined> {
    const roots = await this.getChildren();
    const s = roots.find((x) => x.sessionId === sessionId);
    if (!s) return undefined;
    for (const b of (await this.getChildren(s)) as BranchRow[]) {
      const hit = ((await this.getChildren(b)) as NodeRow[]).find((n) => n.node.id === nodeId);
      if (hit) return hit;
    }
    return undefined;
  }

  dispose(): void { this.changed.dispose(); }
}
