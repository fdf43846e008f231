// sessiondag for VS Code: connects to (or starts) the daemon and wires the Sessions view and the graph
// view (one activity-bar container), the status bar, the chat and graph panels and the commands. The daemon's server→client requests become VS Code
// UI: agent/request_permission a modal dialog, agent/ask_user a quick pick or input box.
import * as vscode from 'vscode';
import type { SessionDagClient } from 'sessiondag-client';
import { ChatPanel } from './chatPanel';
import { ReadonlyDocs, registerCommands } from './commands';
import { Connection } from './connection';
import { GraphPanel } from './graphPanel';
import { GraphView } from './graphView';
import { Sessions } from './sessions';
import { SessionsView } from './sessionsView';
import { setTimingChannel } from './timing';

export interface Api { sessions: Sessions; view: SessionsView; chat: ChatPanel; graph: GraphView; graphPanel: GraphPanel; connection: Connection }

function answerServerRequests(c: SessionDagClient): void {
  c.onAgentRequestPermission(async (p) => {
    const what = p.kind === 'write' ? `write ${p.detail.path ?? '?'}` : `run \`${p.detail.command ?? '?'}\``;
    const pick = await vscode.window.showWarningMessage(`The agent wants to ${what}`,
      { modal: true, detail: `tool: ${p.detail.tool ?? p.kind}\n${p.kind === 'write' ? `file: ${p.detail.path}` : `command: ${p.detail.command}`}\nsession: ${p.session_id}` },
      'Allow');
    return { granted: pick === 'Allow' };
  });
  c.onAgentAskUser(async (p) => {
    const answer = p.options && p.options.length
      ? await vscode.window.showQuickPick(p.options, { title: `The agent asks: ${p.question}`, ignoreFocusOut: true })
      : await vscode.window.showInputBox({ title: 'The agent asks', prompt: p.question, ignoreFocusOut: true });
    if (answer === undefined) throw new Error('the user dismissed the question');
    return { answer };
  });
}

export function activate(ctx: vscode.ExtensionContext): Api {
  const log = vscode.window.createOutputChannel('sessiondag');
  setTimingChannel(log);
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const connection = new Connection(folder, log);
  const sessions = new Sessions(connection, folder, ctx.workspaceState);
  const view = new SessionsView(sessions);
  const tree = vscode.window.createTreeView('sessiondag.sessions', { treeDataProvider: view, showCollapseAll: true });
  const chat = new ChatPanel(ctx, sessions);
  const graph = new GraphView(ctx, sessions);
  const graphPanel = new GraphPanel(ctx, sessions);
  const docs = new ReadonlyDocs();
  ctx.subscriptions.push(log, connection, sessions, view, tree, chat, graph, graphPanel,
    vscode.window.registerWebviewViewProvider(GraphView.id, graph, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider('sessiondag', docs),
    connection.onDidConnect((c) => { answerServerRequests(c); view.invalidate(); }),
    sessions.onDidChangeSession((p) => view.invalidate(p.session_id)),
    sessions.onDidChangeCurrent(() => view.invalidate()),
    tree.onDidExpandElement((e) => view.expanded(e.element, true)),
    tree.onDidCollapseElement((e) => view.expanded(e.element, false)),
    ...registerCommands({ conn: connection, sessions, view, tree: tree as vscode.TreeView<unknown>, chat, graph, graphPanel, docs }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('sessiondag.treePageSize')) view.resetPaging();
      else if (e.affectsConfiguration('sessiondag')) void connection.reconnect();
    }));
  connection.get().catch((e) => {
    log.appendLine(`cannot connect: ${e instanceof Error ? e.message : e}`);
    void vscode.window.showErrorMessage(`sessiondag: cannot reach or start the daemon: ${e instanceof Error ? e.message : e}`,
      'Settings').then((b) => { if (b) void vscode.commands.executeCommand('workbench.action.openSettings', 'sessiondag'); });
  });
  return { sessions, view, chat, graph, graphPanel, connection };
}

export function deactivate(): void {}
