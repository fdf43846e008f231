// The Sessions view: sessions bound to this folder → branches → nodes, refreshed live on
// session/did_change (any writer: this window, another client, a `sessiondag run` in a terminal).
import * as vscode from 'vscode';
import type { Call, SessionDagClient } from 'sessiondag-client';
import { BranchPager, FetchPage } from './model/branchPager';
import {
  BranchExpansion, BranchRow, NodeRow, OlderRow, SessionRow, branchKey, branchRows, costsByHead, nodeRows, olderRow, sessionRows,
} from './model/treeModel';
import type { Sessions } from './sessions';
import { activatedAt, timing } from './timing';

export type Row = SessionRow | BranchRow | NodeRow | OlderRow;

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
  /** Branch key → its pager (the loaded tail); dropped on a change, re-read keeping as many nodes. */
  private readonly pagers = new Map<string, BranchPager>();
  private readonly loaded = new Map<string, number>();
  private readonly nodeCache = new Map<string, Row[]>();
  private readonly parents = new Map<Row, Row>();
  private timer?: NodeJS.Timeout;
  private populated = false;
  private readonly expansion = new BranchExpansion();

  constructor(private readonly sessions: Sessions) {}

  /** The page size changed: every branch starts again from its newest page. */
  resetPaging(): void {
    this.pagers.clear();
    this.loaded.clear();
    this.invalidate();
  }

  /** Drop what is cached for one session (or all) and redraw soon (coalesces bursts of changes). */
  invalidate(sessionId?: string): void {
    if (sessionId === undefined) {
      this.sessionCache = undefined;
      this.branchCache.clear();
      this.nodeCache.clear();
      for (const [k, p] of this.pagers) this.loaded.set(k, p.nodes.length);
      this.pagers.clear();
    } else {
      this.branchCache.delete(sessionId);
      for (const k of [...this.nodeCache.keys()]) if (k.startsWith(`${sessionId}\n`)) this.nodeCache.delete(k);
      for (const [k, p] of [...this.pagers]) {
        if (!k.startsWith(`${sessionId}\n`)) continue;
        this.loaded.set(k, p.nodes.length);
        this.pagers.delete(k);
      }
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
      const open = this.expansion.shown(branchKey(r.sessionId, r.branch), r.branch.current);
      const it = new vscode.TreeItem(r.label, open ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
      it.id = `b:${r.sessionId}:${r.branch.head_id}`;
      it.description = r.description;
      it.iconPath = icon(r.icon);
      it.contextValue = r.contextValue;
      return it;
    }
    if (r.kind === 'older') {
      const it = new vscode.TreeItem(r.label, vscode.TreeItemCollapsibleState.None);
      it.id = `o:${r.sessionId}:${r.branchHead}`;
      it.description = r.description;
      it.iconPath = new vscode.ThemeIcon('fold-up');
      it.contextValue = 'older';
      it.command = { command: 'sessiondag.loadOlder', title: 'Load Older Nodes', arguments: [r] };
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

  /** The user opened or closed a row (TreeView.onDidExpandElement / onDidCollapseElement). */
  expanded(r: Row, open: boolean): void {
    if (r.kind === 'branch') this.expansion.set(branchKey(r.sessionId, r.branch), open);
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
        const usage = await Promise.all(['branch', 'subagent'].map((by) =>
          c.sessionUsage({ session_id: r.sessionId, by: by as 'branch' | 'subagent' }).then((u) => u.rows, () => [])));
        rows = branchRows(r.sessionId, res.branches, costsByHead(...usage));
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

  private pageSize(): number {
    const n = vscode.workspace.getConfiguration('sessiondag').get<number>('treePageSize', 200);
    return Number.isInteger(n) && n >= 1 ? n : 200;
  }

  private fetcher(c: SessionDagClient, sessionId: string): FetchPage {
    return (q) => c.sessionGetBranch({ session_id: sessionId, ...q });
  }

  /** The branch's pager, its newest page loaded (as many nodes as it showed before a refresh). */
  private async pager(c: SessionDagClient, sessionId: string, headId: string): Promise<BranchPager> {
    const key = `${sessionId}\n${headId}`;
    let p = this.pagers.get(key);
    if (!p) {
      p = new BranchPager(headId, this.pageSize());
      await p.loadNewest(this.fetcher(c, sessionId), this.loaded.get(key) ?? 0);
      this.pagers.set(key, p);
    }
    return p;
  }

  private async branchNodes(c: SessionDagClient, r: BranchRow): Promise<Row[]> {
    const key = `${r.sessionId}\n${r.branch.head_id}`;
    let rows = this.nodeCache.get(key);
    if (!rows) {
      const t0 = Date.now();
      const p = await this.pager(c, r.sessionId, r.branch.head_id);
      const nodes = nodeRows(r.sessionId, r.branch.head_id, p.nodes.filter((n: Call) => n.name !== 'context/system_prompt'));
      rows = p.hasOlder ? [olderRow(r.sessionId, r.branch.head_id, p.older, p.pageSize), ...nodes] : nodes;
      this.nodeCache.set(key, rows);
      timing('branch-nodes', { nodes: nodes.length, total: p.total, ms: Date.now() - t0 });
    }
    return rows;
  }

  /** The "load older" row: the branch's next older page. */
  async loadOlder(r: OlderRow): Promise<void> {
    const c = await this.sessions.client();
    const key = `${r.sessionId}\n${r.branchHead}`;
    const p = await this.pager(c, r.sessionId, r.branchHead);
    await p.loadOlder(this.fetcher(c, r.sessionId));
    this.nodeCache.delete(key);
    const parent = this.parents.get(r);
    this.changed.fire(parent);
  }

  /** The row of a node (current branch first), for revealing it in the tree. */
  async findNode(sessionId: string, nodeId: string): Promise<NodeRow | undefined> {
    const roots = await this.getChildren();
    const s = roots.find((x) => x.sessionId === sessionId);
    if (!s) return undefined;
    const c = await this.sessions.client();
    for (const b of (await this.getChildren(s)) as BranchRow[]) {
      const find = async () => ((await this.getChildren(b)).find((n) => n.kind === 'node' && n.node.id === nodeId)) as NodeRow | undefined;
      const hit = await find();
      if (hit) return hit;
      // on this branch but older than the loaded tail: load pages up to it
      const p = await this.pager(c, sessionId, b.branch.head_id);
      const onBranch = p.hasOlder && await c.sessionGetBranch({ session_id: sessionId, head_id: b.branch.head_id, after: nodeId, limit: 1 })
        .then(() => true, () => false); // invalid_cursor: the node is not on this branch
      if (onBranch && (await p.loadUntil(this.fetcher(c, sessionId), nodeId))) {
        this.nodeCache.delete(`${sessionId}\n${b.branch.head_id}`);
        const found = await find();
        this.changed.fire(b);
        if (found) return found;
      }
    }
    return undefined;
  }

  dispose(): void { this.changed.dispose(); }
}
