// The graph panel (a webview): the session DAG drawn as lanes — predecessor chains, forks, spawn
// branches, error nodes. A click selects the node in the Sessions view and in the chat.
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import type { Call } from 'sessiondag-client';
import { layoutGraph } from './model/graphLayout';
import type { Sessions } from './sessions';
import { timing } from './timing';
import { createPanel } from './webviewPanel';

export class GraphPanel implements vscode.Disposable {
  private panel?: vscode.WebviewPanel;
  private sessionId?: string;
  private timer?: NodeJS.Timeout;
  private readonly subs: vscode.Disposable[] = [];
  private script?: string;
  /** Times (Date.now) of the load being drawn, for the 'graph' timing line (bench/vscode_bench.mjs). */
  private loadTimes?: { start: number; trigger: string; newWebview: boolean; fetched: number; laidOut: number };
  private pendingShow?: { start: number; newWebview: boolean };

  constructor(private readonly ext: vscode.ExtensionContext, private readonly sessions: Sessions) {
    this.subs.push(sessions.onDidChangeSession((p) => {
      if (p.session_id !== this.sessionId || !this.panel) return;
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => { this.timer = undefined; void this.load(); }, 50);
    }));
  }

  async show(sessionId?: string): Promise<void> {
    const start = Date.now();
    this.sessionId = sessionId ?? (await this.sessions.ensureCurrent());
    const newWebview = !this.panel;
    if (!this.panel) {
      this.panel = createPanel(this.ext, 'sessiondag.graph', 'sessiondag graph', (w) => this.html(w), (m) => this.onMessage(m),
        () => { this.panel = undefined; }, this.subs);
    } else {
      this.panel.reveal(undefined, true);
    }
    this.pendingShow = { start, newWebview };
    await this.load();
  }

  private onMessage(m: { type: string; id?: string; nodes?: number; at?: number; origin?: number; script?: number; received?: number }): void {
    if (m.type === 'select') void vscode.commands.executeCommand('sessiondag.revealNode', this.sessionId, m.id);
    else if (m.type === 'drawn' && this.loadTimes) {
      const t = this.loadTimes;
      this.loadTimes = undefined;
      // ms after the command (or the change): the webview's document started / ran its script (a new
      // webview only), the data fetched, laid out, received by the webview, drawn and painted
      timing('graph', { trigger: t.trigger, new_webview: t.newWebview ? 1 : 0, nodes: m.nodes!,
        doc_start: t.newWebview ? Math.round(m.origin! - t.start) : 0, script: t.newWebview ? m.script! - t.start : 0,
        fetched: t.fetched - t.start, laid_out: t.laidOut - t.start, received: m.received! - t.start, total: m.at! - t.start });
    }
  }

  /** Every node on every branch of the session, laid out. */
  async load(): Promise<void> {
    const sid = this.sessionId!;
    const show = this.pendingShow;
    this.pendingShow = undefined;
    const start = show?.start ?? Date.now();
    const c = await this.sessions.client();
    const { branches } = await c.sessionListBranches({ session_id: sid });
    const all = new Map<string, Call>();
    const results = await Promise.all(branches.map((b) => c.sessionGetBranch({ session_id: sid, head_id: b.head_id })));
    for (const r of results) for (const n of r.nodes) all.set(n.id, n);
    const fetched = Date.now();
    const layout = layoutGraph(all.values(), branches.map((b) => b.head_id));
    this.loadTimes = { start, trigger: show ? 'show' : 'change', newWebview: show?.newWebview ?? false, fetched, laidOut: Date.now() };
    const current = branches.find((b) => b.current)?.head_id;
    void this.panel?.webview.postMessage({ type: 'layout', sessionId: sid, layout, current });
  }

  select(nodeId: string): void { void this.panel?.webview.postMessage({ type: 'select', id: nodeId }); }

  private html(w: vscode.Webview): string {
    // inline: the webview runs it as soon as its document is written, without a resource round trip
    // (webview → service worker → workbench → extension host) for a file
    const code = this.script ??= readFileSync(vscode.Uri.joinPath(this.ext.extensionUri, 'media', 'graph.js').fsPath, 'utf8');
    const nonce = Math.random().toString(36).slice(2);
    return `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';">
<style>body{margin:0;font-family:var(--vscode-font-family);color:var(--vscode-foreground);font-size:12px}
#head{padding:4px 10px;opacity:.8;border-bottom:1px solid var(--vscode-panel-border)}
#wrap{overflow:auto;height:calc(100vh - 26px)} svg text{fill:var(--vscode-foreground)}
.node{cursor:pointer} .node:hover circle{stroke-width:3} .sel circle{stroke:var(--vscode-focusBorder);stroke-width:4}
.legend span{margin-right:10px}</style></head>
<body><div id="head"><span id="title">loading…</span> <span class="legend"><span style="color:#4aa3ff">● you</span><span style="color:#3fb950">● model</span><span style="color:#a371f7">● tool</span><span style="color:#f85149">● error</span><span>┄ spawn</span></span></div>
<div id="wrap"><svg id="svg" xmlns="http://www.w3.org/2000/svg"></svg></div>
<script nonce="${nonce}">${code}</script></body></html>`;
  }

  dispose(): void {
    this.panel?.dispose();
    for (const s of this.subs) s.dispose();
  }
}
