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
  get(): Promise<SessionDagClient> {
    if (this.client && !this.client.isClosed) return Promise.resolve(this.client);
    if (!this.connecting) {
      this.connecting = this.open().finally(() => { this.connecting = undefined; });
    }
    return this.connecting;
  }

  private async open(): Promise<SessionDagClient> {
    const cfg = vscode.workspace.getConfiguration('sessiondag');
    const command = resolveCommand(cfg.get<string>('command', ''), this.folder);
    const stateDir = cfg.get<string>('stateDir', '') || undefined;
    this.log.appendLine(`connecting (command: ${command.join(' ')}, state dir: ${stateDir ?? 'default'})`);
    const c = await connect({
      stateDir, command, autoStart: cfg.get<boolean>('autoStart', true), idleTimeout: cfg.get<number>('idleTimeout', 300),
      clientName: 'sessiondag-vscode',
    });
    this.client = c;
    this.log.appendLine(`connected to sessiondag ${c.server?.server_info.version ?? '?'}`);
    c.onClose(() => {
      if (this.client !== c) return;
      this.client = undefined;
      this.log.appendLine('the daemon connection closed');
      this.disconnected.fire();
      this.scheduleReconnect(250);
    });
    this.connected.fire(c);
    return c;
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

  async reconnect(): Promise<SessionDagClient> {
    const old = this.client;
    this.client = undefined;
    if (old) await old.close();
    return this.get();
  }

  dispose(): void {
    this.disposed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    void this.client?.close();
    this.connected.dispose();
    this.disconnected.dispose();
  }
}
