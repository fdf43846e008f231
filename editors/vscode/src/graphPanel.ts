// The graph in an editor tab ("Open Graph in Editor"): the same drawing as the graph view, with the width
// of the editor area for a session with many lanes. A new tab is a new webview (about a second in
// code-server before it can draw); the tab is kept while hidden, so opening it again is fast.
import * as vscode from 'vscode';
import { GraphWebview } from './graphWebview';
import type { Sessions } from './sessions';
import { createPanel } from './webviewPanel';

export class GraphPanel implements vscode.Disposable {
  private panel?: vscode.WebviewPanel;
  private graph?: GraphWebview;
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly ext: vscode.ExtensionContext, private readonly sessions: Sessions) {}

  async show(sessionId?: string): Promise<void> {
    const start = Date.now();
    const sid = sessionId ?? (await this.sessions.ensureCurrent());
    const newWebview = !this.panel;
    if (!this.panel || !this.graph) {
      const panel = this.panel = createPanel(this.ext, 'sessiondag.graph', 'sessiondag graph', () => {
        graph.dispose();
        if (this.panel === panel) this.panel = this.graph = undefined;
      }, this.subs);
      const graph = this.graph = new GraphWebview(this.ext, panel.webview, this.sessions, 'editor', () => panel.visible,
        panel.onDidChangeViewState);
    } else {
      this.panel.reveal(undefined, true);
    }
    await this.graph.load(sid, { trigger: 'show', start, newWebview });
  }

  select(nodeId: string): void { this.graph?.select(nodeId); }

  dispose(): void {
    this.panel?.dispose();
    for (const s of this.subs) s.dispose();
  }
}
