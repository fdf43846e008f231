// The commands behind the palette, the Sessions view's context menus and the webviews.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ChatPanel } from './chatPanel';
import type { GraphPanel } from './graphPanel';
import type { GraphView } from './graphView';
import type { Connection } from './connection';
import type { BranchRow, NodeRow, OlderRow, SessionRow } from './model/treeModel';
import { preview } from './model/treeModel';
import { usageMarkdown } from './model/usageReport';
import type { Sessions } from './sessions';
import type { SessionsView } from './sessionsView';
import { syncCommands } from './syncCommands';

/** Read-only documents (rendered messages, git log, a file before a turn) under the `sessiondag:` scheme. */
export class ReadonlyDocs implements vscode.TextDocumentContentProvider {
  private readonly docs = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  put(p: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: 'sessiondag', path: p });
    this.docs.set(uri.toString(), text);
    this.changed.fire(uri);
    return uri;
  }
  provideTextDocumentContent(uri: vscode.Uri): string { return this.docs.get(uri.toString()) ?? ''; }
}

function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => execFile(cmd, args, { cwd, maxBuffer: 64 << 20 }, (e, out, err) => {
    if (e) reject(new Error(`${cmd} ${args.join(' ')}: ${err || e.message}`)); else resolve(out);
  }));
}

const VERBS: Record<string, string> = { create: 'add', write: 'overwrite', delete: 'delete', mode: 'change the mode of' };

/** What a restore will do, one line a file (the first 30), for its confirmation. */
export function restorePlan(changes: { path: string; change: string }[], dirty: string[]): string {
  const lines = changes.slice(0, 30).map((x) => `${VERBS[x.change] ?? x.change} ${x.path}`);
  if (changes.length > 30) lines.push(`… and ${changes.length - 30} more`);
  if (dirty.length) lines.push('', `Changed since the last snapshot (the undo point keeps them): ${dirty.join(', ')}`);
  return lines.join('\n');
}

export interface Parts {
  conn: Connection; sessions: Sessions; view: SessionsView; tree: vscode.TreeView<unknown>;
  chat: ChatPanel; graph: GraphView; graphPanel: GraphPanel; docs: ReadonlyDocs;
}

export function registerCommands(p: Parts): vscode.Disposable[] {
  const { sessions, view, chat, graph, graphPanel, docs } = p;
  const client = () => sessions.client();
  const guard = (fn: (...a: any[]) => Promise<unknown>) => async (...a: any[]) => {
    try {
      return await fn(...a);
    } catch (e) {
      const kind = (e as { kind?: string }).kind;
      void vscode.window.showErrorMessage(`sessiondag: ${kind ? `${kind}: ` : ''}${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
  };
  const reg = (id: string, fn: (...a: any[]) => Promise<unknown>) => vscode.commands.registerCommand(id, guard(fn));

  return [
    reg('sessiondag.openChat', () => chat.show()),
    reg('sessiondag.newSession', async () => { await sessions.newSession(); view.invalidate(); await chat.show(); }),
    reg('sessiondag.showGraph', (r?: SessionRow) => graph.show(r?.sessionId)),
    reg('sessiondag.openGraphInEditor', (r?: SessionRow) => graphPanel.show(r?.sessionId ?? graph.sessionId)),
    reg('sessiondag.refresh', async () => view.invalidate()),
    reg('sessiondag.reconnect', async () => { await p.conn.reconnect(); view.invalidate(); }),
    reg('sessiondag.stop', async () => {
      if (!sessions.currentId) return;
      const r = await (await client()).agentCancel({ session_id: sessions.currentId });
      if (!r.cancelled) void vscode.window.showInformationMessage('sessiondag: no turn is running');
    }),
    reg('sessiondag.openSession', async (r: SessionRow) => {
      await sessions.setCurrent(r.sessionId);
      view.invalidate();
      await chat.show();
    }),
    reg('sessiondag.checkoutBranch', async (r: BranchRow) => {
      await (await client()).sessionCheckout({ session_id: r.sessionId, head_id: r.branch.head_id });
      if (sessions.currentId !== r.sessionId) await sessions.setCurrent(r.sessionId);
      view.invalidate(r.sessionId);
    }),
    reg('sessiondag.nameBranch', async (r: BranchRow) => {
      const name = await vscode.window.showInputBox({ title: 'Name branch', prompt: 'Empty to remove the name', value: r.branch.name ?? '' });
      if (name === undefined) return;
      await (await client()).sessionNameBranch({ session_id: r.sessionId, head_id: r.branch.head_id, name: name.trim() || null });
      view.invalidate(r.sessionId);
    }),
    reg('sessiondag.forkHere', async (r: NodeRow) => {
      const text = await vscode.window.showInputBox({
        title: 'Fork here: a new sibling of this message', prompt: 'Edit the prompt; the agent runs it on a new branch',
        value: typeof r.node.output === 'string' ? r.node.output : preview(r.node.output, 2000), ignoreFocusOut: true,
      });
      if (!text) return;
      if (sessions.currentId !== r.sessionId) await sessions.setCurrent(r.sessionId);
      await chat.prompt(text, r.node.predecessor ?? 'ROOT');
      view.invalidate(r.sessionId);
    }),
    reg('sessiondag.retryTurn', async (r: NodeRow) => {
      if (sessions.currentId !== r.sessionId) await sessions.setCurrent(r.sessionId);
      await chat.prompt(typeof r.node.output === 'string' ? r.node.output : preview(r.node.output, 100000), r.node.predecessor ?? 'ROOT');
      view.invalidate(r.sessionId);
    }),
    reg('sessiondag.compact', async (r: NodeRow) => {
      const summary = await vscode.window.showInputBox({ title: 'Compact up to here', prompt: 'Summary that replaces these messages in the model\'s context', ignoreFocusOut: true });
      if (!summary) return;
      const c = await client();
      const { nodes } = await c.sessionGetBranch({ session_id: r.sessionId, head_id: r.branchHead });
      // a contiguous run of the chain: from the first message (after the system prompt) up to this node
      const upto = nodes.findIndex((n) => n.id === r.node.id);
      const from = nodes.findIndex((n) => n.name !== 'context/system_prompt');
      if (upto < 0 || from < 0 || from > upto) throw new Error('nothing to compact up to this node');
      const covers = nodes.slice(from, upto + 1).map((n) => n.id);
      await c.sessionCompact({ session_id: r.sessionId, covers_ids: covers, summary });
      view.invalidate(r.sessionId);
      void vscode.window.showInformationMessage(`sessiondag: compacted ${covers.length} messages into a summary; the next model calls get the summary instead`);
    }),
    reg('sessiondag.reset', async (r: SessionRow) => {
      const ok = await vscode.window.showWarningMessage(`Reset session ${r.sessionId}? Its history is removed from the store.`, { modal: true }, 'Reset');
      if (ok !== 'Reset') return;
      await (await client()).sessionReset({ session_id: r.sessionId });
      if (sessions.currentId === r.sessionId) await sessions.clearCurrent();
      view.invalidate();
    }),
    reg('sessiondag.showMessages', async (r: NodeRow) => {
      const c = await client();
      const manifest = (r.node.metadata as { render_manifest?: Record<string, unknown> }).render_manifest;
      const res = manifest
        ? await c.sessionRender({ session_id: r.sessionId, manifest, ...(typeof manifest.head_id === 'string' ? { head_id: manifest.head_id } : {}) })
        : await c.sessionRender({ session_id: r.sessionId, head_id: r.node.predecessor ?? undefined });
      const uri = docs.put(`/${r.sessionId}/messages-${r.node.id}.json`, JSON.stringify(res, null, 2));
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.languages.setTextDocumentLanguage(doc, 'json');
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    reg('sessiondag.showGitLog', async (r?: SessionRow) => {
      const sid = r?.sessionId ?? sessions.currentId;
      if (!sid) return;
      const h = await (await client()).sessionOpen({ session_id: sid, working_dir: sessions.folder ?? '/', allow_working_dir_mismatch: true });
      const out = await run('git', ['--git-dir', path.join(h.path, 'git'), 'log', '--stat', '--date=iso']);
      const doc = await vscode.workspace.openTextDocument(docs.put(`/${sid}/git-log.txt`, out));
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    reg('sessiondag.showUsage', async (r?: SessionRow) => {
      const sid = r?.sessionId ?? sessions.currentId;
      if (!sid) return;
      const c = await client();
      const bys = ['branch', 'subagent', 'model', 'turn'] as const;
      const results = await Promise.all(bys.map((by) => c.sessionUsage({ session_id: sid, by })));
      const doc = await vscode.workspace.openTextDocument(docs.put(`/${sid}/usage.md`, usageMarkdown(sid, results)));
      await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    reg('sessiondag.showChange', async (rel: string, change?: string) => {
      const folder = sessions.folder;
      if (!folder) return;
      let before = '';
      if (change !== 'added') before = await run('git', ['show', `HEAD:${rel}`], folder).catch(() => '');
      const left = docs.put(`/before/${rel}`, before);
      const right = change === 'deleted' ? docs.put(`/deleted/${rel}`, '') : vscode.Uri.file(path.join(folder, rel));
      await vscode.commands.executeCommand('vscode.diff', left, right, `${rel} (${change ?? 'changed'} by the agent)`);
    }),
    reg('sessiondag.restoreFiles', async (r: NodeRow) => {
      // a dry run first: the confirmation lists what the restore will change (and what changed since the
      // last snapshot: the restore's undo point keeps it)
      const c = await client();
      const params = { session_id: r.sessionId, node_id: r.node.id, what: 'files' as const };
      const plan = (await c.sessionRestore({ ...params, dry_run: true })).files;
      const changes = (plan?.changes ?? []).filter((x) => x.change !== 'skipped');
      const dirty = plan?.dirty ?? [];
      const where = r.node.role === 'user' ? `the end of the turn "${preview(r.node.output, 40)}"` : r.node.id.slice(0, 8);
      if (!changes.length) {
        void vscode.window.showInformationMessage(`sessiondag: the files are already as at ${where}`);
        return;
      }
      const ok = await vscode.window.showWarningMessage(`Restore ${changes.length} file(s) to ${where}?`,
        { modal: true, detail: restorePlan(changes, dirty) }, 'Restore');
      if (ok !== 'Restore') return;
      const res = await c.sessionRestore({ ...params, force: dirty.length > 0 });
      const n = (res.files?.changes ?? []).filter((x) => x.change !== 'skipped').length;
      void vscode.window.showInformationMessage(`sessiondag: restored ${n} file(s) to ${r.node.id.slice(0, 8)} (the undo point keeps the files as they were)`);
    }),
    reg('sessiondag.compareWithCurrent', async (r: NodeRow) => {
      const folder = sessions.folder;
      const res = await (await client()).sessionDiff({ session_id: r.sessionId, from: r.node.id, to: 'current', texts: true });
      if (!res.files.length) {
        void vscode.window.showInformationMessage(`sessiondag: no file differs from ${r.node.id.slice(0, 8)}`);
        return;
      }
      for (const f of res.files) {
        if (f.old_text === undefined && f.new_text === undefined) continue;
        const left = docs.put(`/${r.node.id.slice(0, 12)}/${f.path}`, f.old_text ?? '');
        const right = f.change === 'deleted' || !folder ? docs.put(`/current/${f.path}`, f.new_text ?? '')
          : vscode.Uri.file(path.join(folder, f.path));
        // not a preview: each file's diff editor stays (a preview would be replaced by the next one)
        await vscode.commands.executeCommand('vscode.diff', left, right, `${f.path} (${r.node.id.slice(0, 8)} ↔ current)`,
          { preview: false });
      }
    }),
    ...syncCommands(sessions, view, chat, reg),
    reg('sessiondag.loadOlder', (r: OlderRow) => view.loadOlder(r)),
    reg('sessiondag.selectNode', async (r: NodeRow) => {
      if (sessions.currentId === r.sessionId) chat.highlight(r.node.id);
      graph.select(r.node.id);
      graphPanel.select(r.node.id);
    }),
    reg('sessiondag.revealNode', async (sessionId: string, nodeId: string) => {
      const row = await view.findNode(sessionId, nodeId);
      if (row) await p.tree.reveal(row, { select: true, focus: false, expand: true });
      chat.highlight(nodeId);
      graph.select(nodeId);
      graphPanel.select(nodeId);
    }),
  ];
}
