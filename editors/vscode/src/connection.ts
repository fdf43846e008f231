// The connection to the daemon: find or auto-start it for the configured state dir, reconnect when it
// goes away, and tell the rest of the extension (onDidConnect / onDidDisconnect).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { connect, SessionDagClient } from 'sessiondag-client';

export function resolveCommand(setting: string, folder: string | undefined, envPath = process.env.PATH ?? ''): string[] {
  if (setting.trim()) return [setting.trim()];
  for (const dir of envPath.split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, 'sessiondag'))) return [path.join(dir, 'sessiondag')];
  }
  if (folder && isExecutable(path.join(folder, '.venv', 'bin', 'sessiondag'))) return [path.join(folder, '.venv', 'bin', 'sessiondag')];
  return ['sessiondag'];
}

function isExecutable(p: string): boolean {
  try { fs.accessSync(p, fs.constants.X_OK); return fs.statSync(p).isFile(); } catch { return false; }
}

/** daemon/will_stop's reason, as the CLI says it */
const STOP_REASONS: Record<string, string> = {
  stop: 'sessiondag daemon stop', signal: 'it got a signal', idle: 'idle timeout', stdio_closed: 'its client went away',
};

export class Connection implements vscode.Disposable {
  client?: SessionDagClient;
  private readonly connected = new vscode.EventEmitter<SessionDagClient>();
  private readonly disconnected = new vscode.EventEmitter<void>();
  readonly onDidConnect = this.connected.event;
  readonly onDidDisconnect = this.disconnected.event;
  private connecting?: Promise<SessionDagClient>;
  private disposed = false;
  private retryTimer?: NodeJS.Timeout;

  constructor(private readonly folder: string | undefined, private readonly log: vscode.OutputChannel) {}

  /** The connected client, connecting (or auto-starting the daemon) first if needed. */
  get(startDaemon = false): Promise<SessionDagClient> {
    if (this.client && !this.client.isClosed) return Promise.resolve(this.client);
    if (!this.connecting) {
      this.connecting = this.open(startDaemon).finally(() => { this.connecting = undefined; });
    }
    return this.connecting;
  }

  /** startDaemon: start one even with sessiondag.autoStart off (the user asked for it). */
  private async open(startDaemon = false): Promise<SessionDagClient> {
    const cfg = vscode.workspace.getConfiguration('sessiondag');
    const command = resolveCommand(cfg.get<string>('command', ''), this.folder);
    const stateDir = cfg.get<string>('stateDir', '') || undefined;
    this.log.appendLine(`connecting (command: ${command.join(' ')}, state dir: ${stateDir ?? 'default'})`);
    const c = await connect({
      stateDir, command, autoStart: startDaemon || cfg.get<boolean>('autoStart', true), idleTimeout: cfg.get<number>('idleTimeout', 300),
      clientName: 'sessiondag-vscode',
    });
    this.client = c;
    this.log.appendLine(`connected to sessiondag ${c.server?.server_info.version ?? '?'}`);
    // a daemon that stops says so to every client first (daemon/will_stop); a crash is a bare close
    let stopped: string | undefined;
    c.onDaemonWillStop((p) => {
      stopped = STOP_REASONS[p.reason] ?? p.reason;
      this.log.appendLine(`the daemon is stopping (${p.reason}; cancelled turns: ${p.cancelled_sessions.join(', ') || 'none'})`);
    });
    c.onClose(() => {
      if (this.client !== c) return;
      this.client = undefined;
      this.log.appendLine('the daemon connection closed');
      this.disconnected.fire();
      if (stopped) this.tellStopped(stopped, cfg.get<boolean>('autoStart', true));
      this.scheduleReconnect(250);
    });
    this.connected.fire(c);
    return c;
  }

  /** The daemon stopped on purpose: say so; with auto-start a new one starts as after a crash, without
   * it the user is offered the restart. */
  private tellStopped(why: string, autoStart: boolean): void {
    const text = `sessiondag: the daemon stopped (${why})`;
    if (autoStart) {
      void vscode.window.showInformationMessage(`${text}; a new one is started`);
      return;
    }
    void vscode.window.showWarningMessage(text, 'Start the Daemon').then((pick) => {
      if (pick) void this.reconnect(true).catch((e) => vscode.window.showErrorMessage(`sessiondag: ${e instanceof Error ? e.message : e}`));
    });
  }

  private scheduleReconnect(delay: number): void {
    if (this.disposed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.get().catch((e) => {
        this.log.appendLine(`reconnect failed: ${e instanceof Error ? e.message : e}`);
        this.scheduleReconnect(Math.min(delay * 2, 10000));
      });
    }, delay);
  }

  async reconnect(startDaemon = false): Promise<SessionDagClient> {
    const old = this.client;
    this.client = undefined;
    if (old) await old.close();
    return this.get(startDaemon);
  }

  dispose(): void {
    this.disposed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    void this.client?.close();
    this.connected.dispose();
    this.disconnected.dispose();
  }
}
