// One webview panel of the extension (chat, graph): scripts on, kept alive when hidden, media/ only.
import * as vscode from 'vscode';

export function createPanel(ext: vscode.ExtensionContext, viewType: string, title: string,
  html: (w: vscode.Webview) => string, onMessage: (m: any) => unknown, onDispose: () => void,
  subs: vscode.Disposable[]): vscode.WebviewPanel {
  const panel = vscode.window.createWebviewPanel(viewType, title, vscode.ViewColumn.Beside, {
    enableScripts: true, retainContextWhenHidden: true,
    localResourceRoots: [vscode.Uri.joinPath(ext.extensionUri, 'media')],
  });
  panel.iconPath = vscode.Uri.joinPath(ext.extensionUri, 'media', 'dag.svg');
  panel.webview.html = html(panel.webview);
  panel.webview.onDidReceiveMessage(onMessage, undefined, subs);
  panel.onDidDispose(onDispose, undefined, subs);
  return panel;
}
