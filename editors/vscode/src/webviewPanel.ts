// One webview panel of the extension (chat, graph in an editor tab): scripts on, kept alive when hidden,
// media/ only. The caller sets its html and listens to its messages.
import * as vscode from 'vscode';

export function createPanel(ext: vscode.ExtensionContext, viewType: string, title: string, onDispose: () => void,
  subs: vscode.Disposable[]): vscode.WebviewPanel {
  const panel = vscode.window.createWebviewPanel(viewType, title, vscode.ViewColumn.Beside, {
    enableScripts: true, retainContextWhenHidden: true,
    localResourceRoots: [vscode.Uri.joinPath(ext.extensionUri, 'media')],
  });
  panel.iconPath = vscode.Uri.joinPath(ext.extensionUri, 'media', 'dag.svg');
  panel.onDidDispose(onDispose, undefined, subs);
  return panel;
}
