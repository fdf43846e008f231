// One webview that draws a session's DAG (media/graph.js): the sidebar's graph view and the editor-tab
// graph both are one of these. It fetches every branch, lays the DAG out, posts it, redraws on the
// session's did_change and turns a click on a node into "select it in the tree and the chat".
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import type { Call } from 'sessiondag-client';
import { layoutGraph } from './model/graphLayout';
import type { Sessions } from './sessions';
import { timing } from './timing';

/** What started a load, for the 'graph' timing line (bench/vscode_bench.mjs): the command ('show'),
 * the view being resolved ('resolve') or a change of the session ('change'); Date.now() at the start. */
export interface LoadCause { trigger: 'show' | 'resolve' | 'change'; start: number; newWebview: boolean }

interface Drawn { type: 'drawn'; nodes: number; at: number; origin: number; script: number; received: number }

let script: string | undefined;

export class GraphWebview implements vscode.Disposable {
  sessionId?: string;
  private timer?: NodeJS.Timeout;
  private readonly subs: vscode.Disposable[] = [];
  private loadTimes?: LoadCause & { fetched: number; laidOut: number };
  /** The session changed while the webview was hidden: redraw when it shows again. */
  private stale = false;

  /** `host` names the surface in the document (`<body data-host>`) and in the timing lines; `visible`
   * and `shown` are its host's visibility and the event that fires when it may have changed (a hidden
   * graph does not refetch the session on every change of a running turn: it redraws once shown). */
  constructor(ext: vscode.ExtensionContext, private readonly webview: vscode.Webview, private readonly sessions: Sessions,
    private readonly host: 'view' | 'editor', private readonly visible: () => boolean, shown: vscode.Event<unknown>) {
    // inline: the webview runs it as soon as its document is written, without a resource round trip
    // (webview → service worker → workbench → extension host) for a file
    script ??= readFileSync(vscode.Uri.joinPath(ext.extensionUri, 'media', 'graph.js').fsPath, 'utf8');
    webview.options = { enableScripts: true, localResourceRoots: [] };
    this.subs.push(webview.onDidReceiveMessage((m) => this.onMessage(m)), sessions.onDidChangeSession((p) => {
      if (p.session_id !== this.sessionId) return;
      if (!this.visible()) { this.stale = true; return; }
      if (this.timer) clearTimeout(this.timer);
      const start = Date.now();
      this.timer = setTimeout(() => { this.timer = undefined; void this.load(p.session_id, { trigger: 'change', start, newWebview: false }); }, 50);
    }), shown(() => {
      if (this.stale && this.sessionId && this.visible()) {
        void this.load(this.sessionId, { trigger: 'change', start: Date.now(), newWebview: false });
      }
    }));
    webview.html = html(script, host);
  }

  /** Every node on every branch of the session, laid out and posted to the webview. */
  async load(sessionId: string, cause: LoadCause): Promise<void> {
    this.sessionId = sessionId;
    this.stale = false;
    const c = await this.sessions.client();
    const { branches } = await c.sessionListBranches({ session_id: sessionId });
    const all = new Map<string, Call>();
    const results = await Promise.all(branches.map((b) => c.sessionGetBranch({ session_id: sessionId, head_id: b.head_id })));
    for (const r of results) for (const n of r.nodes) all.set(n.id, n);
    const fetched = Date.now();
    const layout = layoutGraph(all.values(), branches.map((b) => b.head_id));
    if (sessionId !== this.sessionId) return; // another session was asked for meanwhile
    this.loadTimes = { ...cause, fetched, laidOut: Date.now() };
    const current = branches.find((b) => b.current)?.head_id;
    void this.webview.postMessage({ type: 'layout', sessionId, layout, current });
  }

  /** No session to show (the current one was reset). */
  clear(): void {
    this.sessionId = undefined;
    void this.webview.postMessage({ type: 'clear' });
  }

  select(nodeId: string): void { void this.webview.postMessage({ type: 'select', id: nodeId }); }

  private onMessage(m: { type: string; id?: string } | Drawn): void {
    if (m.type === 'select' && 'id' in m) void vscode.commands.executeCommand('sessiondag.revealNode', this.sessionId, m.id);
    else if (m.type === 'drawn' && this.loadTimes) {
      const d = m as Drawn;
      const t = this.loadTimes;
      this.loadTimes = undefined;
      // ms after the start (command, resolve or change): the webview's document started / ran its script
      // (a new webview only), the data fetched, laid out, received by the webview, drawn and painted;
      // painted_at is the absolute time (Date.now) for the bench's own start (a click)
      timing('graph', { host: this.host, trigger: t.trigger, new_webview: t.newWebview ? 1 : 0, nodes: d.nodes,
        doc_start: t.newWebview ? Math.round(d.origin - t.start) : 0, script: t.newWebview ? d.script - t.start : 0,
        fetched: t.fetched - t.start, laid_out: t.laidOut - t.start, received: d.received - t.start, total: d.at - t.start,
        painted_at: d.at });
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.subs) s.dispose();
  }
}

function html(code: string, host: string): string {
  const nonce = Math.random().toString(36).slice(2);
  return `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}';">
<style>body{margin:0;font-family:var(--vscode-font-family);color:var(--vscode-foreground);font-size:12px}
#head{padding:4px 10px;opacity:.8;border-bottom:1px solid var(--vscode-panel-border)}
#wrap{overflow:auto;height:calc(100vh - 26px)} svg text{fill:var(--vscode-foreground)}
.node{cursor:pointer} .node:hover circle{stroke-width:3} .sel circle{stroke:var(--vscode-focusBorder);stroke-width:4}
.legend span{margin-right:10px}</style></head>
<body data-host="${host}"><div id="head"><span id="title">…</span> <span class="legend"><span style="color:#4aa3ff">● you</span><span style="color:#3fb950">● model</span><span style="color:#a371f7">● tool</span><span style="color:#f85149">● error</span><span>┄ spawn</span></span></div>
<div id="wrap"><svg id="svg" xmlns="http://www.w3.org/2000/svg"></svg></div>
<script nonce="${nonce}">${code}</script></body></html>`;
}
