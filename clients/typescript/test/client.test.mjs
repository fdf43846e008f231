// sessiondag-client against a real daemon subprocess: every method, typed errors, notifications from
// another client and from another process's `sessiondag run`, cancellation, server→client requests.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { runCli, startDaemon, tempDir, waitFor } from './helpers.mjs';

const require = createRequire(import.meta.url);
const sd = require('../dist/index.js');

const SCRIPT = [
  { match: 'stream please', text: 'Hello from the scripted model, streamed in several chunks of text.' },
  { match: 'ask me', tool_calls: [{ name: 'ask_user', arguments: { question: 'Which colour?', options: ['red', 'blue'] } }] },
  { match: 'blue', text: 'You chose blue.' },
  { match: 'write it', tool_calls: [{ name: 'write_file', arguments: { path: 'out.txt', content: 'hello file\n' } }] },
  { match: 'wrote 11 bytes', text: 'Written.' },
  { match: 'hang now', text: 'thinking', hang: true },
];

describe('sessiondag-client against a daemon', () => {
  let d, a, b, work;
  before(async () => {
    d = await startDaemon({ script: SCRIPT });
    work = tempDir('sd-ts-work-');
    a = await sd.connect({ socket: d.socket, clientName: 'ts-a' });
    b = await sd.connect({ socket: d.socket, clientName: 'ts-b' });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    assert.equal(await d.stop(), 0);
  });

  test('generated types match rpc_schema (drift check)', () => {
    execFileSync(process.execPath, [path.join(import.meta.dirname, '..', 'scripts', 'gen-types.mjs'), '--check']);
  });

  test('initialize: the daemon serves exactly the methods the schema lists', () => {
    assert.deepEqual([...a.server.capabilities.methods].sort(),
      [...sd.CLIENT_REQUESTS, 'exit', '$/cancelRequest'].filter((m) => a.server.capabilities.methods.includes(m)).sort());
    for (const m of sd.CLIENT_REQUESTS) assert.ok(a.server.capabilities.methods.includes(m), m);
    for (const n of sd.SERVER_NOTIFICATIONS) assert.ok(a.server.capabilities.notifications.includes(n), n);
  });

  test('every session method, with typed results', async () => {
    const h = await a.sessionOpen({ working_dir: work });
    assert.equal(h.head_id, 'ROOT');
    assert.equal(h.working_dir, fs.realpathSync(work));
    const sid = h.session_id;
    const again = await a.sessionResume({ session_id: sid, working_dir: work });
    assert.equal(again.session_id, sid);
    const u = await a.sessionAppend({ session_id: sid, node: { role: 'user', name: 'me', output: 'q1', predecessor: 'ROOT' } });
    assert.equal(u.head_id, u.node.id);
    const llm = (await a.sessionAppend({ session_id: sid, node: { role: 'llm', name: 'm', status: 'running', predecessor: u.node.id }, expected_head: u.node.id })).node;
    const upd = await a.sessionUpdate({ session_id: sid, node_id: llm.id, output: 'a1', status: 'completed' });
    assert.equal(upd.node.status, 'completed');
    assert.equal((await a.sessionGetNode({ session_id: sid, node_id: llm.id })).node.output, 'a1');
    assert.deepEqual((await a.sessionGetBranch({ session_id: sid })).nodes.map((n) => n.id), [u.node.id, llm.id]);
    const fork = (await a.sessionAppend({ session_id: sid, node: { role: 'user', name: 'me', output: 'q1 again', predecessor: 'ROOT' } })).node;
    assert.deepEqual(await a.sessionNameBranch({ session_id: sid, head_id: fork.id, name: 'retry' }), { head_id: fork.id, name: 'retry' });
    const lb = await a.sessionListBranches({ session_id: sid });
    assert.equal(lb.branches.find((x) => x.head_id === fork.id).name, 'retry');
    assert.equal((await a.sessionCheckout({ session_id: sid, head_id: llm.id })).head_id, llm.id);
    const spawned = await a.sessionSpawnBranch({ session_id: sid, caller_node_id: llm.id, source: 'task', name: 'research', content: 'look' });
    assert.equal((await a.sessionGetNode({ session_id: sid, node_id: spawned.node_id })).node.caller, llm.id);
    const r = await a.sessionRender({ session_id: sid, format: 'anthropic' });
    assert.ok(r.messages.length > 0 && typeof r.manifest === 'object');
    const summary = await a.sessionCompact({ session_id: sid, covers_ids: [u.node.id, llm.id], summary: 'asked q1' });
    assert.equal(summary.name, 'context/summary');
    const chat = await a.sessionView({ session_id: sid, kind: 'chat' });
    assert.equal(chat.kind, 'chat');
    assert.ok(chat.items.length > 0);
    assert.equal((await a.sessionView({ session_id: sid, kind: 'tree' })).kind, 'tree');
    const c1 = await a.sessionCommit({ session_id: sid, message: 'turn one' });
    assert.match(c1.commit, /^[0-9a-f]{40}$/);
    assert.equal((await a.sessionCommit({ session_id: sid })).commit, null);
    const list = await a.sessionList({ working_dir: work });
    assert.ok(list.sessions.some((s) => s.session_id === sid));
    assert.deepEqual(await a.sessionSubscribe({ session_id: sid }), { session_id: sid, head_id: llm.id, bound: true });
    assert.equal((await a.sessionUnsubscribe({ session_id: sid })).unsubscribed, true);
    assert.equal((await a.sessionReset({ session_id: sid })).reset, true);
    const st = await a.sessionStart({ working_dir: work, session_id: 'fresh-one' });
    assert.equal(st.session_id, 'fresh-one');
    assert.deepEqual(await a.daemonPing(), {});
    const status = await a.daemonStatus();
    assert.equal(status.pid, d.proc.pid);
    assert.ok(status.clients.length >= 2);
  });

  test('typed errors from data.kind', async () => {
    const h = await a.sessionOpen({ working_dir: work });
    await assert.rejects(a.sessionGetNode({ session_id: h.session_id, node_id: 'nope' }), (e) =>
      e instanceof sd.NotFoundError && e.kind === 'not_found' && e.data.what === 'node' && e.data.id === 'nope' && e.code === -32014);
    await assert.rejects(a.sessionStart({ working_dir: work, session_id: h.session_id }), sd.SessionExistsError);
    await assert.rejects(a.sessionAppend({ session_id: h.session_id, node: { role: 'user', name: 'me', output: 'x' } }),
      (e) => e instanceof sd.PredecessorMissingError && e.data.role === 'user');
    await assert.rejects(a.sessionAppend({ session_id: h.session_id, node: { role: 'user', name: 'me', predecessor: 'ROOT' }, expected_head: 'zzz' }),
      sd.HeadMismatchError);
    await assert.rejects(a.call('session/get_node', { session_id: h.session_id }), sd.InvalidParamsError);
    await assert.rejects(a.call('no/such_method', {}), sd.MethodNotFoundError);
    await assert.rejects(a.sessionOpen({ working_dir: work, session_id: 'bad id!' }), sd.InvalidSessionIdError);
    assert.ok(sd.NotFoundError.prototype instanceof sd.SessionDagRpcError);
  });

  test('notifications: a second client sees the first one\'s writes', async () => {
    const h = await a.sessionOpen({ working_dir: work });
    await b.sessionSubscribe({ session_id: h.session_id });
    const seen = waitFor((f) => b.onSessionDidChange(f),
      (p) => p.session_id === h.session_id && p.changes.find((c) => c.kind === 'append' && c.node.output === 'from a'), 'did_change');
    const u = await a.sessionAppend({ session_id: h.session_id, node: { role: 'user', name: 'me', output: 'from a', predecessor: 'ROOT' } });
    const change = await seen;
    assert.equal(change.node.id, u.node.id);
    await b.sessionUnsubscribe({ session_id: h.session_id });
  });

  test('notifications: a `sessiondag run` in another process appears live', async () => {
    const h = await a.sessionOpen({ working_dir: work, session_id: 'cli-run' });
    await b.sessionSubscribe({ session_id: 'cli-run' });
    const env = { ...d.env };
    delete env.SESSIONDAG_SCRIPT;
    const userSeen = waitFor((f) => b.onSessionDidChange(f),
      (p) => p.session_id === 'cli-run' && p.changes.find((c) => c.kind === 'append' && c.node.role === 'user' && c.node.output === 'outside task'), 'user node');
    const llmDone = waitFor((f) => b.onSessionDidChange(f),
      (p) => p.session_id === 'cli-run' && p.changes.find((c) => (c.kind === 'update' && c.fields.status === 'completed')
        || (c.kind === 'append' && c.node.role === 'llm' && c.node.status === 'completed')), 'llm completed');
    // --in-process: the other process writes the session itself (its built-in scripted reply), not through the daemon
    const run = await runCli(['run', 'outside task', '--session', 'cli-run', '--workdir', work, '--state-dir', d.stateDir, '--in-process'], env)
      .catch((e) => ({ code: -1, err: String(e) }));
    // older CLIs take the state dir from the environment only
    const res = run.code === 2 && /state-dir/.test(run.err)
      ? await runCli(['run', 'outside task', '--session', 'cli-run', '--workdir', work], { ...env, SESSIONDAG_HOME: d.stateDir })
      : run;
    assert.equal(res.code, 0, res.err);
    await userSeen;
    await llmDone;
    assert.ok(h.session_id === 'cli-run');
  });

  test('agent/prompt streams agent/did_update and commits the turn', async () => {
    const h = await a.sessionOpen({ working_dir: work });
    const deltas = [];
    const kinds = new Set();
    const sub = a.onAgentDidUpdate((p) => {
      if (p.session_id !== h.session_id) return;
      kinds.add(p.kind);
      if (p.kind === 'text_delta') deltas.push(p.delta);
    });
    const res = await a.agentPrompt({ session_id: h.session_id, content: 'stream please' });
    sub.dispose();
    assert.equal(res.stop_reason, 'end_turn');
    assert.equal(res.text, SCRIPT[0].text);
    assert.ok(deltas.length > 1);
    assert.equal(deltas.join(''), SCRIPT[0].text);
    for (const k of ['node_appended', 'node_updated', 'turn_finished']) assert.ok(kinds.has(k), k);
    assert.equal((await a.agentCancel({ session_id: h.session_id })).cancelled, false);
  });

  test('answering agent/ask_user and agent/request_permission', async () => {
    const h = await a.sessionOpen({ working_dir: work });
    const asked = [];
    const d1 = a.onAgentAskUser((p) => { asked.push(p); return { answer: 'blue' }; });
    const perms = [];
    const d2 = a.onAgentRequestPermission(async (p) => { perms.push(p); return { granted: true }; });
    const r1 = await a.agentPrompt({ session_id: h.session_id, content: 'ask me' });
    assert.equal(r1.text, 'You chose blue.');
    assert.deepEqual(asked, [{ session_id: h.session_id, question: 'Which colour?', options: ['red', 'blue'] }]);
    const r2 = await a.agentPrompt({ session_id: h.session_id, content: 'write it' });
    assert.equal(r2.text, 'Written.');
    assert.deepEqual(perms, [{ session_id: h.session_id, kind: 'write', detail: { tool: 'write_file', path: 'out.txt', old_text: null } }]);  // a new file: no old text
    assert.equal(fs.readFileSync(path.join(work, 'out.txt'), 'utf8'), 'hello file\n');
    d1.dispose();
    d2.dispose();
    const answer = (await a.sessionGetBranch({ session_id: h.session_id })).nodes;
    assert.ok(answer.some((n) => n.role === 'user' && n.output === 'write it'));
  });

  test('cancellation: $/cancelRequest from a token, and agent/cancel of a running turn', async () => {
    // cancelled at once (request and cancel reach the daemon together) and once the request is in flight
    const now = new sd.CancellationTokenSource();
    const first = a.daemonPing({ delay: 30 }, now.token);
    now.cancel();
    await assert.rejects(first, (e) => e instanceof sd.RequestCancelledError && e.code === -32800);
    const later = new sd.CancellationTokenSource();
    const slow = a.daemonPing({ delay: 30 }, later.token);
    for (;;) {
      const st = await b.daemonStatus();
      if (st.clients.some((c) => c.client_info.name === 'ts-a' && c.in_flight > 0)) break;
    }
    later.cancel();
    await assert.rejects(slow, (e) => e instanceof sd.RequestCancelledError && e.code === -32800);
    const h = await a.sessionOpen({ working_dir: work });
    const started = waitFor((f) => a.onAgentDidUpdate(f), (p) => p.session_id === h.session_id && p.kind === 'text_delta', 'first delta');
    const turn = a.agentPrompt({ session_id: h.session_id, content: 'hang now' });
    await started;
    assert.equal((await a.agentCancel({ session_id: h.session_id })).cancelled, true);
    const res = await turn;
    assert.equal(res.stop_reason, 'cancelled');
  });
});

describe('discovery, auto-start, stdio, shutdown', () => {
  test('auto-start finds no daemon, starts one on the default socket, and the next connect finds it', async () => {
    const root = tempDir();
    const { isolatedEnv, sessiondagBin } = await import('./helpers.mjs');
    const env = isolatedEnv(root, { SESSIONDAG_HOME: path.join(root, 'home-state') });
    await assert.rejects(sd.connect({ env }), (e) => e.code === 'ENOENT');
    const c = await sd.connect({ env, autoStart: true, command: [sessiondagBin()], idleTimeout: 60 });
    const st = await c.daemonStatus();
    assert.equal(st.state_dir, fs.realpathSync(path.join(root, 'home-state')));
    assert.ok(fs.existsSync(sd.defaultSocketPath(path.join(root, 'home-state'), env)));
    // started as every client starts it (`sessiondag daemon start`): it logs where `daemon logs` reads
    assert.equal(st.log_path, path.join(st.state_dir, 'daemon.log'));
    assert.equal(st.log_path, sd.daemonLogPath(st.state_dir));
    assert.match(fs.readFileSync(st.log_path, 'utf8'), /ready pid=/);
    const c2 = await sd.connect({ env });
    assert.equal((await c2.daemonStatus()).pid, st.pid);
    await c2.close();
    const stopped = await c.daemonStop();
    assert.equal(stopped.stopping, true);
    await new Promise((r) => c.onClose(r));
    await assert.rejects(c.daemonPing(), sd.ConnectionClosedError);
  });

  test('auto-start reports a daemon that cannot start', async () => {
    const root = tempDir();
    const { isolatedEnv } = await import('./helpers.mjs');
    const env = isolatedEnv(root);
    await assert.rejects(sd.connect({ env, stateDir: path.join(root, 's'), autoStart: true, command: ['/nonexistent/sessiondag'] }),
      (e) => e instanceof sd.DaemonStartError && /nonexistent/.test(e.message));
  });

  test('XDG_STATE_HOME rule and state key agree with the daemon', async () => {
    const root = tempDir();
    const { isolatedEnv } = await import('./helpers.mjs');
    const env = isolatedEnv(root);
    assert.equal(sd.defaultStateDir(env), path.join(root, 'xdg-state', 'sessiondag'));
    const d = await startDaemon({ args: [] });
    try {
      const sockEnv = d.env;
      const expected = sd.defaultSocketPath(d.stateDir, sockEnv);
      // the daemon above was given an explicit socket; its pidfile names it and discovery uses it
      assert.deepEqual(sd.candidateSockets(d.stateDir, sockEnv), [d.socket, expected]);
      const c = await sd.connect({ stateDir: d.stateDir, env: sockEnv });
      assert.equal((await c.daemonStatus()).pid, d.proc.pid);
      await c.close();
    } finally {
      await d.stop();
    }
  });

  test('stdio: a spawned `serve --stdio` answers and ends on close; shutdown refuses later requests', async () => {
    const root = tempDir();
    const { isolatedEnv, sessiondagBin } = await import('./helpers.mjs');
    const c = await sd.connect({ stdio: true, command: [sessiondagBin()], stateDir: path.join(root, 's'), env: isolatedEnv(root) });
    assert.deepEqual(await c.daemonPing(), {});
    assert.equal(await c.shutdown(), null);
    await assert.rejects(c.daemonPing(), sd.InvalidRequestError);
    const exited = new Promise((r) => c.process.once('exit', r));
    await c.close();
    assert.equal(await exited, 0);
  });
});

describe('deadlines against a stopped daemon', () => {
  test('a SIGSTOPped daemon: a call and a new connect reject DaemonNotResponding; after SIGCONT it answers', async () => {
    const d = await startDaemon();
    const c = await sd.connect({ socket: d.socket, clientName: 'ts-deadline', timeout: 1 });
    try {
      assert.deepEqual(await c.call('daemon/ping', {}), {});
      process.kill(d.proc.pid, 'SIGSTOP');
      try {
        await assert.rejects(c.call('daemon/status', {}), (e) => e instanceof sd.DaemonNotResponding
          && e.method === 'daemon/status' && e.timeout === 1 && /did not answer daemon\/status within 1 s/.test(e.message));
        await assert.rejects(sd.connect({ socket: d.socket, clientName: 'ts-late', timeout: 1 }),
          (e) => e instanceof sd.DaemonNotResponding && e.method === 'initialize');
      } finally {
        process.kill(d.proc.pid, 'SIGCONT');
      }
      // a slow answer that the daemon is alive for is waited on (the ping answers): 2.5 s > timeout
      assert.deepEqual(await c.call('daemon/ping', { delay: 2.5 }), {});
    } finally {
      await c.close();
      assert.equal(await d.stop(), 0);
    }
  });
});
