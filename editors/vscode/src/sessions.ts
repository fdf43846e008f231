// Which sessions this window follows: the folder's sessions (subscribed for live changes), the current
// one, its binding state and usage; the status-bar item shows them.
import * as vscode from 'vscode';
import type { SessionDagClient, SessionDidChangeParams, SessionHandle, SessionSummary } from 'sessiondag-client';
import { Connection } from './connection';
import { shortId } from './model/treeModel';

export class Sessions implements vscode.Disposable {
  currentId?: string;
  private handle?: SessionHandle;
  private readonly subscribed = new Set<string>();
  private readonly unbound = new Set<string>();
  private readonly item = vscode.window.createStatusBarItem('sessiondag.status', vscode.StatusBarAlignment.Left, 50);
  private readonly changedCurrent = new vscode.EventEmitter<string | undefined>();
  private readonly changedSession = new vscode.EventEmitter<SessionDidChangeParams>();
  private readonly subs: vscode.Disposable[] = [];
  readonly onDidChangeCurrent = this.changedCurrent.event;
  /** session/did_change of any followed session. */
  readonly onDidChangeSession = this.changedSession.event;
  private connectedState: 'connecting' | 'connected' | 'disconnected' = 'connecting';

  constructor(private readonly conn: Connection, readonly folder: string | undefined,
    private readonly memento: vscode.Memento) {
    this.item.name = 'sessiondag';
    this.item.command = 'sessiondag.openChat';
    this.currentId = memento.get<string>(`sessiondag.current:${folder}`);
    this.subs.push(conn.onDidConnect((c) => this.attach(c)), conn.onDidDisconnect(() => {
      this.subscribed.clear();
      this.connectedState = 'disconnected';
      this.render();
    }));
    this.render();
    this.item.show();
  }

  client(): Promise<SessionDagClient> { return this.conn.get(); }

  private attach(c: SessionDagClient): void {
    this.connectedState = 'connected';
    c.onSessionDidChange((p) => this.changedSession.fire(p));
    c.onSessionDidUnbind((p) => { this.unbound.add(p.session_id); this.render(); });
    c.onSessionDidRebind((p) => { this.unbound.delete(p.session_id); this.render(); });
    this.render();
    if (this.currentId) void this.refreshHandle().catch(() => undefined);
  }

  /** The folder's sessions; each is subscribed once per connection. */
  async list(): Promise<SessionSummary[]> {
    const c = await this.client();
    const { sessions } = await c.sessionList(this.folder ? { working_dir: this.folder } : {});
    await Promise.all(sessions.filter((s) => s.readable !== false).map((s) => this.follow(s.session_id)));
    return sessions;
  }

  async follow(sessionId: string): Promise<void> {
    if (this.subscribed.has(sessionId)) return;
    this.subscribed.add(sessionId);
    const c = await this.client();
    try {
      const r = await c.sessionSubscribe({ session_id: sessionId });
      if (!r.bound) this.unbound.add(sessionId);
    } catch (e) {
      this.subscribed.delete(sessionId);
      throw e;
    }
  }

  /** The current session, creating one for the folder when there is none. */
  async ensureCurrent(): Promise<string> {
    if (this.currentId) return this.currentId;
    const c = await this.client();
    const newest = (await this.list()).filter((s) => s.readable !== false)
      .sort((a, b) => (b.created_at ?? 0) - (a.created_at ?? 0))[0];
    if (newest) await this.setCurrent(newest.session_id);
    else await this.newSession(c);
    return this.currentId!;
  }

  async newSession(c?: SessionDagClient): Promise<string> {
    c = c ?? (await this.client());
    if (!this.folder) throw new Error('open a folder first: sessions are bound to a working directory');
    const h = await c.sessionStart({ working_dir: this.folder });
    await this.setCurrent(h.session_id, h);
    return h.session_id;
  }

  async setCurrent(sessionId: string, handle?: SessionHandle): Promise<void> {
    this.currentId = sessionId;
    this.handle = handle;
    await this.memento.update(`sessiondag.current:${this.folder}`, sessionId);
    await this.follow(sessionId);
    if (!handle) await this.refreshHandle();
    this.render();
    this.changedCurrent.fire(sessionId);
  }

  /** No current session (it was reset): the status bar says so. */
  async clearCurrent(): Promise<void> {
    this.currentId = undefined;
    this.handle = undefined;
    await this.memento.update(`sessiondag.current:${this.folder}`, undefined);
    this.render();
    this.changedCurrent.fire(undefined);
  }

  /** Re-read the current session's handle (usage total). */
  async refreshHandle(): Promise<void> {
    if (!this.currentId) return;
    const c = await this.client();
    this.handle = await c.sessionOpen({ session_id: this.currentId, working_dir: this.folder ?? '/', allow_working_dir_mismatch: true });
    this.render();
  }

  isBound(sessionId: string): boolean { return !this.unbound.has(sessionId); }

  private render(): void {
    const it = this.item;
    it.backgroundColor = undefined;
    if (this.connectedState === 'disconnected') {
      it.text = '$(debug-disconnect) sessiondag: disconnected';
      it.tooltip = 'The daemon is gone; reconnecting…';
      it.command = 'sessiondag.reconnect';
      return;
    }
    it.command = 'sessiondag.openChat';
    if (!this.currentId) {
      it.text = this.connectedState === 'connected' ? '$(comment-discussion) sessiondag' : '$(sync~spin) sessiondag';
      it.tooltip = 'No current session: open the chat to start one';
      return;
    }
    const u = this.handle?.usage_total;
    const tok = u ? u.input_tokens + u.output_tokens : undefined;
    const bound = this.isBound(this.currentId);
    it.text = `${bound ? '$(comment-discussion)' : '$(warning)'} ${shortId(this.currentId)}${bound ? '' : ' unbound'}${tok !== undefined ? ` · ${fmt(tok)} tok` : ''}`;
    it.tooltip = `sessiondag session ${this.currentId}\n${bound ? 'bound to' : 'UNBOUND (working dir missing):'} ${this.handle?.working_dir ?? this.folder ?? ''}`
      + (u ? `\nusage: ${u.input_tokens} in / ${u.output_tokens} out` : '');
    if (!bound) it.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.item.dispose();
    this.changedCurrent.dispose();
    this.changedSession.dispose();
  }
}

function fmt(n: number): string { return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : String(n); }
