// The chat panel (a webview): the current branch's conversation, prompts with a streamed reply,
// tool calls and sub-agents, a stop button, errors with their kind, files a turn wrote (click: diff).
import * as vscode from 'vscode';
import type { AgentDidUpdateParams, SessionDidChangeParams } from 'sessiondag-client';
import { SessionDagRpcError } from 'sessiondag-client';
import { ChatModel } from './model/chatModel';
import { HeardDuring } from './model/heardDuring';
import { PostGate } from './model/postGate';
import { costText } from './model/treeModel';
import type { Sessions } from './sessions';
import { timing } from './timing';
import { createPanel } from './webviewPanel';

export class ChatPanel implements vscode.Disposable {
  private panel?: vscode.WebviewPanel;
  private model = new ChatModel();
  private sessionId?: string;
  private running = false;
  private reloadTimer?: NodeJS.Timeout;
  private readonly subs: vscode.Disposable[] = [];
  /** The first streamed token of the running prompt: sent, received by the extension, shown by the webview. */
  private firstToken?: { sent: number; received?: number };
  /** User node id → what its turn cost (session/usage by turn: its calls, its sub-agents' too). */
  private costs: Record<string, string> = {};
  private costTimer?: NodeJS.Timeout;
  /** The changes heard while a load's get_branch is under way: applied again on top of its answer. */
  private readonly heard = new HeardDuring<SessionDidChangeParams>();
  /** Posts to the panel's webview, held until its script listens. */
  private gate?: PostGate<unknown>;

  constructor(private readonly ext: vscode.ExtensionContext, private readonly sessions: Sessions) {
    this.subs.push(sessions.onDidChangeCurrent((id) => {
      if (!this.panel) return;
      if (id) { void this.load(); return; }
      // the current session is gone (reset): an empty chat; the next prompt starts a new session
      this.sessionId = undefined;
      this.model = new ChatModel();
      this.post({ type: 'session', sessionId: '' });
      this.render();
    }),
      sessions.onDidChangeSession((p) => this.onChange(p)));
  }

  async show(): Promise<void> {
    const sid = await this.sessions.ensureCurrent();
    const fresh = !this.panel; // a closed chat opened again: its webview starts empty, so it loads too
    if (!this.panel) {
      const panel = this.panel = createPanel(this.ext, 'sessiondag.chat', 'sessiondag chat', () => { this.panel = this.gate = undefined; }, this.subs);
      this.gate = new PostGate((m) => { void panel.webview.postMessage(m); }, () => {
        this.post({ type: 'session', sessionId: this.sessionId ?? '' });
        this.render();
      });
      this.panel.webview.onDidReceiveMessage((m) => this.onMessage(m), undefined, this.subs);
      this.panel.webview.html = this.html(this.panel.webview);
    } else {
      this.panel.reveal(undefined, true);
    }
    if (fresh || sid !== this.sessionId) await this.load();
  }

  /** Reload the conversation of the current session's head. */
  async load(): Promise<void> {
    const sid = await this.sessions.ensureCurrent();
    this.sessionId = sid;
    const c = await this.sessions.client();
    const { value, heard } = await this.heard.read(() => c.sessionGetBranch({ session_id: sid }));
    this.model = new ChatModel(value.nodes);
    for (const p of heard) if (p.session_id === sid) this.model.apply(p.changes);
    this.post({ type: 'session', sessionId: sid });
    this.render();
    await this.refreshCosts();
  }

  /** Re-read each turn's cost from the daemon's usage ledger and redraw. */
  private async refreshCosts(): Promise<void> {
    const sid = this.sessionId;
    if (!sid) return;
    const c = await this.sessions.client();
    const u = await c.sessionUsage({ session_id: sid, by: 'turn' }).catch(() => undefined);
    if (!u || sid !== this.sessionId) return;
    const costs: Record<string, string> = {};
    for (const r of u.rows) {
      const t = costText(r);
      if (r.user_node_id && t) costs[r.user_node_id] = `${t} · ${r.input_tokens + r.output_tokens} tokens`;
    }
    this.costs = costs;
    this.render();
  }

  private render(): void {
    const items = this.model.items().map((it) => (it.kind === 'user' && this.costs[it.id] ? { ...it, cost: this.costs[it.id] } : it));
    this.post({ type: 'items', items, running: this.running });
  }

  private post(msg: unknown): void { this.gate?.post(msg); }

  highlight(nodeId: string): void { this.post({ type: 'highlight', id: nodeId }); }

  private onChange(p: SessionDidChangeParams): void {
    if (p.session_id !== this.sessionId || !this.panel) return;
    this.heard.hear(p); // a load under way may answer with the state from before this change
    if (this.running) return; // our own turn streams through agent/did_update
    this.model.apply(p.changes);
    if (p.changes.some((ch) => ch.kind === 'update' && ch.fields.metadata && 'sessiondag.cost' in ch.fields.metadata)) {
      if (this.costTimer) clearTimeout(this.costTimer);
      this.costTimer = setTimeout(() => { void this.refreshCosts(); }, 50); // a model call finished elsewhere
    }
    if (p.changes.some((ch) => ch.kind === 'checkout' || ch.kind === 'reload')) {
      if (this.reloadTimer) clearTimeout(this.reloadTimer);
      this.reloadTimer = setTimeout(() => { void this.load(); }, 30);
      return;
    }
    this.render();
  }

  private async onMessage(m: { type: string; text?: string; path?: string; change?: string; id?: string; shown?: number; dom?: number }): Promise<void> {
    if (m.type === 'ready') this.gate?.ready();
    else if (m.type === 'send' && m.text) await this.prompt(m.text);
    else if (m.type === 'stop') await vscode.commands.executeCommand('sessiondag.stop');
    else if (m.type === 'diff' && m.path) await vscode.commands.executeCommand('sessiondag.showChange', m.path, m.change);
    else if (m.type === 'select' && m.id) await vscode.commands.executeCommand('sessiondag.revealNode', this.sessionId, m.id);
    else if ((m.type === 'restore' || m.type === 'compare') && m.id && this.sessionId) {
      // a turn's checkpoint, as the Sessions view's rows do it (a user node: the files at the end of its turn)
      const it = this.model.items().find((x) => x.id === m.id);
      const row = { kind: 'node', sessionId: this.sessionId, node: { id: m.id, role: 'user', output: it?.text ?? '' } };
      await vscode.commands.executeCommand(m.type === 'restore' ? 'sessiondag.restoreFiles' : 'sessiondag.compareWithCurrent', row);
    }
    else if (m.type === 'shown' && this.firstToken?.received && m.shown) {
      const f = this.firstToken;
      this.firstToken = undefined;
      timing('first-token', { send_to_received: f.received! - f.sent, received_to_dom: (m.dom ?? m.shown) - f.received!,
        received_to_shown: m.shown - f.received! });
    }
  }

  /** Run a turn (optionally forked from `branchFrom`), streaming it into the panel. */
  async prompt(text: string, branchFrom?: string): Promise<void> {
    await this.show();
    const sid = this.sessionId!;
    const c = await this.sessions.client();
    if (this.running) {
      void vscode.window.showWarningMessage('sessiondag: a turn is running; stop it first');
      return;
    }
    this.running = true;
    this.post({ type: 'running', running: true });
    if (branchFrom) { // the chat shows the new branch from the fork point on
      const nodes = branchFrom === 'ROOT' ? [] : (await c.sessionGetBranch({ session_id: sid, head_id: branchFrom })).nodes;
      this.model = new ChatModel(nodes);
      this.render();
    }
    let first = true;
    this.firstToken = { sent: Date.now() };
    const sub = c.onAgentDidUpdate((p: AgentDidUpdateParams) => {
      if (p.session_id !== sid) return;
      if (p.kind === 'text_delta' && p.node_id && p.delta !== undefined) {
        this.model.delta(p.node_id, p.delta);
        if (first && this.firstToken) this.firstToken.received = Date.now();
        this.post({ type: 'delta', id: p.node_id, text: p.delta, first });
        first = false;
      } else if (p.node) {
        this.model.upsert(p.node);
        this.render();
      }
    });
    try {
      const res = await c.agentPrompt({ session_id: sid, content: text, ...(branchFrom ? { branch_from: branchFrom } : {}) });
      if (res.error) this.post({ type: 'error', kind: res.error.type, message: res.error.message });
      if (res.stop_reason === 'cancelled') this.post({ type: 'notice', text: 'turn cancelled' });
    } catch (e) {
      const kind = e instanceof SessionDagRpcError ? (e.kind ?? `code ${e.code}`) : (e as Error).name;
      const message = e instanceof Error ? e.message : String(e);
      this.post({ type: 'error', kind, message });
      void vscode.window.showErrorMessage(`sessiondag: ${kind}: ${message}`);
    } finally {
      sub.dispose();
      this.running = false;
      this.post({ type: 'running', running: false });
      await this.load().catch(() => undefined);
      await this.sessions.refreshHandle().catch(() => undefined);
    }
  }

  private html(w: vscode.Webview): string {
    const media = (f: string) => w.asWebviewUri(vscode.Uri.joinPath(this.ext.extensionUri, 'media', f));
    const nonce = Math.random().toString(36).slice(2);
    return `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${w.cspSource}; script-src 'nonce-${nonce}';">
<link rel="stylesheet" href="${media('chat.css')}"></head>
<body><div id="head"><span id="session"></span><span id="state"></span></div>
<div id="log" aria-live="polite"></div>
<form id="form"><textarea id="input" rows="3" placeholder="Ask the agent… (Ctrl+Enter to send)"></textarea>
<div class="buttons"><button id="send" type="submit">Send</button><button id="stop" type="button" disabled>Stop</button></div></form>
<script nonce="${nonce}" src="${media('chat.js')}"></script></body></html>`;
  }

  dispose(): void {
    this.panel?.dispose();
    for (const s of this.subs) s.dispose();
  }
}
