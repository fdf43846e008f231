// Sessions through git remotes (docs/sync.md), as `sessiondag sync push|pull|clone` do them: Share Session
// (session/push), Pull Session (session/pull: the other machine's turns merged in), Open Session from a
// Git Remote (remote/list, then session/pull: cloned here, bound to this folder when it is the same project).
import * as vscode from 'vscode';
import type { SessionDagClient } from 'sessiondag-client';
import type { SessionRow } from './model/treeModel';
import type { Sessions } from './sessions';
import type { SessionsView } from './sessionsView';
import type { ChatPanel } from './chatPanel';

const URL_ITEM = 'Enter a git URL…';

/** A remote: one of `sessiondag sync remote add`'s (the default first), or a git URL typed in.
 * Every pick here opens after a round trip to the daemon (a remote listing can take seconds) and keeps
 * open when the focus moves (ignoreFocusOut): the workbench gives the focus back to what had it before
 * the previous quick input (the chat's webview, an iframe) late, and a pick that closes on focus out
 * can vanish before the user saw it, the command ending as if they had pressed Escape. */
export async function pickRemote(c: SessionDagClient, title: string): Promise<string | undefined> {
  const { remotes } = await c.remoteList({});
  const rows = (remotes as { name: string; url: string; default: boolean }[])
    .sort((a, b) => Number(b.default) - Number(a.default))
    .map((r) => ({ label: r.name, description: `${r.url}${r.default ? ' · default' : ''}` }));
  let pick: string | undefined = URL_ITEM;
  if (rows.length) {
    const chosen = await vscode.window.showQuickPick([...rows, { label: URL_ITEM, description: 'a path, file://, git://, http(s)://, ssh://' }],
      { title, placeHolder: 'the git remote (sessiondag sync remote add NAME URL names one)', ignoreFocusOut: true });
    if (!chosen) return undefined;
    pick = chosen.label;
  }
  if (pick !== URL_ITEM) return pick;
  const url = await vscode.window.showInputBox({ title, prompt: 'A git URL: a path, file://, git://, http(s)://, ssh:// or host:path', ignoreFocusOut: true });
  return url?.trim() || undefined;
}

const size = (n: number) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`);

export function syncCommands(sessions: Sessions, view: SessionsView, chat: ChatPanel,
  reg: (id: string, fn: (...a: any[]) => Promise<unknown>) => vscode.Disposable): vscode.Disposable[] {
  /** The row's session (else the current one), the client and the remote picked for it. */
  const target = async (r: SessionRow | undefined, verb: string, none: string) => {
    const sid = r?.sessionId ?? sessions.currentId;
    if (!sid) throw new Error(none);
    const c = await sessions.client();
    const remote = await pickRemote(c, `${verb} session ${sid}`);
    return remote ? { sid, c, remote } : undefined;
  };
  return [
    reg('sessiondag.pushSession', async (r?: SessionRow) => {
      const t = await target(r, 'Share', 'no session to share: open one first');
      if (!t) return;
      const { sid, c, remote } = t;
      let res;
      try {
        res = await c.sessionPush({ session_id: sid, remote });
      } catch (e) {
        // a value that looks like a credential: named (node, field); pushed only if the user says so
        if ((e as { kind?: string }).kind !== 'secret_in_session') throw e;
        const ok = await vscode.window.showWarningMessage(`${(e as Error).message}. Push it anyway?`, { modal: true }, 'Push Anyway');
        if (ok !== 'Push Anyway') return;
        res = await c.sessionPush({ session_id: sid, remote, allow_secrets: true });
      }
      void vscode.window.showInformationMessage(res.status === 'up_to_date'
        ? `sessiondag: ${remote} already has session ${sid}`
        : `sessiondag: pushed session ${sid} to ${remote} (${res.objects} objects, ${size(res.bytes)})`);
    }),
    reg('sessiondag.pullSession', async (r?: SessionRow) => {
      const t = await target(r, 'Pull', 'no session to pull: use Open Session from a Git Remote');
      if (!t) return;
      const { sid, c, remote } = t;
      const res = await c.sessionPull({ session_id: sid, remote, ...(sessions.folder ? { working_dir: sessions.folder } : {}) });
      view.invalidate(sid);
      void vscode.window.showInformationMessage(res.status === 'up_to_date'
        ? `sessiondag: session ${sid} is up to date with ${remote}`
        : `sessiondag: pulled session ${sid} from ${remote} (${res.status}${res.added ? `, ${res.added} new nodes` : ''})`);
    }),
    reg('sessiondag.openFromRemote', async () => {
      const c = await sessions.client();
      const remote = await pickRemote(c, 'Open a session from a git remote');
      if (!remote) return;
      const listed = ((await c.remoteList({ remote })).sessions ?? []) as
        { session_id: string; title?: string; last_activity?: number | null; working_dir?: string | null; turn?: number | null }[];
      if (!listed.length) {
        void vscode.window.showInformationMessage(`sessiondag: ${remote} holds no session`);
        return;
      }
      const pick = await vscode.window.showQuickPick(listed.map((s) => ({
        label: s.title || s.session_id, description: s.session_id,
        detail: [s.last_activity ? new Date(s.last_activity * 1000).toLocaleString() : '', s.working_dir ?? ''].filter(Boolean).join(' · '),
        sid: s.session_id,
      })), { title: `Sessions on ${remote}`, matchOnDescription: true, ignoreFocusOut: true });
      if (!pick) return;
      const res = await c.sessionPull({ session_id: pick.sid, remote, ...(sessions.folder ? { working_dir: sessions.folder } : {}) });
      await sessions.setCurrent(pick.sid);
      view.invalidate();
      await chat.show();
      void vscode.window.showInformationMessage(`sessiondag: opened session ${pick.sid} from ${remote} (${res.status})`);
    }),
  ];
}
