// The graph view: a webview view in the sessiondag activity-bar container, next to the Sessions tree.
// VS Code builds it when the container opens (as it does the tree) and keeps it alive while hidden, so
// "Show Session Graph" only reveals it and posts the data: a new webview costs about a second in
// code-server (bench/vscode_bench.mjs), a live one a few dozen ms. It shows the current session and
// follows it; Show Session Graph on a session row shows that one.
import * as vscode from 'vscode';
import { GraphWebview } from './graphWebview';
import type { Sessions } from './sessions';

export class GraphView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly id = 'sessiondag.graphView';
  private view?: vscode.WebviewView;
  private graph?: GraphWebview;
  /** Asked for before the view was resolved: shown once it is. */
  private pending?: { sessionId: string; start: number };
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly ext: vscode.ExtensionContext, private readonly sessions: Sessions) {
    this.subs.push(sessions.onDidChangeCurrent((id) => {
      if (!this.graph) return;
      if (!id) this.graph.clear();
      else if (id !== this.graph.sessionId) void this.graph.load(id, { trigger: 'change', start: Date.now(), newWebview: false });
    }));
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    const start = Date.now();
    this.view = view;
    const graph = this.graph = new GraphWebview(this.ext, view.webview, this.sessions, 'view', () => view.visible,
      view.onDidChangeVisibility);
    view.onDidDispose(() => {
      graph.dispose();
      if (this.graph === graph) this.view = this.graph = undefined;
    }, undefined, this.subs);
    const asked = this.pending;
    this.pending = undefined;
    const sid = asked?.sessionId ?? this.sessions.currentId;
    if (!sid) graph.clear();
    else void graph.load(sid, { trigger: asked ? 'show' : 'resolve', start: asked?.start ?? start, newWebview: true });
  }

  /** Reveal the view (opening the container) and draw the session in it. */
  async show(sessionId?: string): Promise<void> {
    const start = Date.now();
    const sid = sessionId ?? (await this.sessions.ensureCurrent());
    if (this.view && this.graph) {
      this.view.show(true);
      await this.graph.load(sid, { trigger: 'show', start, newWebview: false });
    } else {
      this.pending = { sessionId: sid, start };
      await vscode.commands.executeCommand(`${GraphView.id}.focus`);
    }
  }

  /** The session the view shows, if it is resolved. */
  get sessionId(): string | undefined { return this.graph?.sessionId; }

  select(nodeId: string): void { this.graph?.select(nodeId); }

  dispose(): void {
    this.graph?.dispose();
    for (const s of this.subs) s.dispose();
  }
}
