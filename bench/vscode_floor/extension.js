// Bench-only extension (bench/vscode_bench.mjs packs and installs it next to sessiondag): the command
// opens a new, empty webview panel (the previous one is closed) the way the graph panel opens, with an
// inline script that reports once its first frame has painted. The time is the floor every new webview
// pays in this VS Code before any extension code or data runs.
const vscode = require('vscode');

exports.activate = (ctx) => {
  const log = vscode.window.createOutputChannel('sessiondag-bench');
  // activated once the window has finished starting (onStartupFinished): the bench waits for it after
  // a reload, so that a cold open it measures is not the window's own start-up
  log.appendLine(`timing ${JSON.stringify({ what: 'startup-finished', at: Date.now() })}`);
  let panel;
  ctx.subscriptions.push(log, vscode.commands.registerCommand('sessiondagBench.emptyWebview', () => {
    panel?.dispose();
    const start = Date.now();
    panel = vscode.window.createWebviewPanel('sessiondagBench.empty', 'empty', vscode.ViewColumn.Beside,
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] });
    const nonce = Math.random().toString(36).slice(2);
    panel.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-${nonce}';"></head>
<body><p id="p">empty</p><script nonce="${nonce}">const s = Date.now(); const v = acquireVsCodeApi();
requestAnimationFrame(() => setTimeout(() => v.postMessage({ script: s, at: Date.now(), origin: performance.timeOrigin }), 0));</script></body></html>`;
    panel.webview.onDidReceiveMessage((m) => log.appendLine(`timing ${JSON.stringify({ what: 'empty-webview',
      doc_start: Math.round(m.origin - start), script: m.script - start, total: m.at - start })}`));
  }));
};
exports.deactivate = () => {};
