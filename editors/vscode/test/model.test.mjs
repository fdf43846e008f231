// Unit tests of the extension's pure parts: the sessions tree model, the graph layout, the chat model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { branchRows, nodeRows, sessionRows, preview } = require('../dist/model/treeModel.js');
const { layoutGraph } = require('../dist/model/graphLayout.js');
const { ChatModel } = require('../dist/model/chatModel.js');
const { HeardDuring } = require('../dist/model/heardDuring.js');
const { PostGate } = require('../dist/model/postGate.js');
const { BranchPager } = require('../dist/model/branchPager.js');
const { olderRow, branchKey, BranchExpansion } = require('../dist/model/treeModel.js');

let seq = 0;
const node = (id, role, over = {}) => ({
  id, seq: ++seq, created_at: 0, role, name: role === 'user' ? 'user' : role === 'llm' ? 'scripted' : 'tool', input: null,
  output: '', status: 'completed', caller: 'ROOT', predecessor: 'ROOT', reads: [], metadata: {}, ...over,
});

test('tree: branches sorted current, main, named, forks, spawns; labels and context values', () => {
  const rows = branchRows('s', [
    { head_id: 'spawnhead1', name: null, main: false, current: false, spawn_root: 'root12345', status: 'running', seq: 9, label: 'sub-agent', from_turn: null, turns: 0 },
    { head_id: 'forkhead12', name: null, main: false, current: true, spawn_root: null, status: 'completed', seq: 7, label: 'hello again', from_turn: 0, turns: 1 },
    { head_id: 'mainhead12', name: null, main: true, current: false, spawn_root: null, status: 'error', seq: 5, label: 'main', from_turn: null, turns: 2 },
    { head_id: 'namedhead1', name: 'retry', main: false, current: false, spawn_root: null, status: 'completed', seq: 3, label: 'retry', from_turn: 2, turns: 3 },
  ]);
  assert.deepEqual(rows.map((r) => r.label), ['hello again', 'main', 'retry', 'sub-agent']);
  assert.match(rows[0].description, /from the start/);
  assert.match(rows[2].description, /from turn 2/);
  assert.doesNotMatch(rows[1].description, /from/);
  const named = branchRows('s', [{ head_id: 'm', name: 'trunk', main: true, current: true, spawn_root: null, status: 'completed', seq: 1, label: 'trunk', from_turn: null, turns: 1 }]);
  assert.equal(named[0].label, 'trunk (main)');
  assert.deepEqual(rows.map((r) => r.icon), ['fork', 'main', 'named', 'spawn']);
  assert.equal(rows[0].contextValue, 'branch.current');
  assert.match(rows[0].description, /current/);
  assert.match(rows[1].description, /error/);
  assert.match(rows[3].description, /running/);
});

test('tree: node rows carry role icons, status, a one-line preview and turn context', () => {
  seq = 0;
  const u = node('u1', 'user', { output: 'fix\nthe   bug please' });
  const l = node('l1', 'llm', { caller: 'u1', predecessor: 'u1', output: 'x'.repeat(200) });
  const t = node('t1', 'code', { name: 'write_file', caller: 'l1', predecessor: 'l1', status: 'error', input: { path: 'a' }, output: 'denied' });
  const r = node('r1', 'llm', { caller: 'u1', predecessor: 't1', status: 'running', output: null });
  const rows = nodeRows('s', 'r1', [u, l, t, r]);
  assert.equal(rows[0].label, 'you: fix the bug please');
  assert.equal(rows[0].contextValue, 'node.user.turn.completed');
  assert.equal(rows[1].icon, 'llm');
  assert.ok(rows[1].label.length <= 'scripted: '.length + 60 && rows[1].label.endsWith('…'));
  assert.equal(rows[2].icon, 'error');
  assert.equal(rows[2].description, '#3 · error');
  assert.equal(rows[3].icon, 'running');
  assert.equal(preview({ a: 1 }), '{"a":1}');
});

test('tree: a branch stays open as its head moves (main after a pull that is no fast-forward); others as they were', () => {
  const b = (over) => ({ head_id: 'h1', name: null, main: false, current: false, spawn_root: null, status: 'completed', seq: 1, label: 'x', from_turn: null, turns: 1, ...over });
  const e = new BranchExpansion();
  // shown: main current (open), a fork and a spawn branch closed; the user opens the spawn branch
  assert.equal(e.shown(branchKey('s', b({ main: true, current: true, head_id: 'm1' })), true), true);
  assert.equal(e.shown(branchKey('s', b({ head_id: 'f1' })), false), false);
  assert.equal(e.shown(branchKey('s', b({ spawn_root: 'r1', head_id: 'p1' })), false), false);
  e.set(branchKey('s', b({ spawn_root: 'r1', head_id: 'p1' })), true);
  // a pull: main's head moves to the remote's turn and HEAD stays where it was (no branch current)
  assert.equal(e.shown(branchKey('s', b({ main: true, head_id: 'm2' })), false), true);
  assert.equal(e.shown(branchKey('s', b({ spawn_root: 'r1', head_id: 'p2' })), false), true);
  assert.equal(e.shown(branchKey('s', b({ head_id: 'f1' })), false), false);
  // the user closes main: it stays closed while not current, opens when it is current again
  e.set(branchKey('s', b({ main: true, head_id: 'm2' })), false);
  assert.equal(e.shown(branchKey('s', b({ main: true, head_id: 'm3' })), false), false);
  assert.equal(e.shown(branchKey('s', b({ main: true, head_id: 'm3', current: true })), true), true);
  // another session's main is another branch
  assert.notEqual(branchKey('s', b({ main: true })), branchKey('t', b({ main: true })));
});

test('tree: sessions newest first, current marked', () => {
  const rows = sessionRows([{ session_id: 'a', created_at: 1 }, { session_id: 'b', created_at: 2 }], 'a');
  assert.deepEqual(rows.map((r) => [r.sessionId, r.current]), [['b', false], ['a', true]]);
  // labelled by their titles (session/list), as `sessions list` shows them; the id in the description
  const titled = sessionRows([{ session_id: 's-1', created_at: 1, title: 'fix the parser' }, { session_id: 's-2', created_at: 2, title: null }]);
  assert.deepEqual(titled.map((r) => r.label), ['s-2', 'fix the parser']);
  assert.match(titled[1].description, /s-1/);
});

test('graph: a turn that changed files is marked (its checkpoint, else the watcher\'s list); other nodes are not', () => {
  seq = 0;
  const u1 = node('u1', 'user', { metadata: { checkpoint: { id: 't', changed: 2 } } });
  const l1 = node('l1', 'llm', { caller: 'u1', predecessor: 'u1', metadata: { checkpoint: { changed: 5 } } });
  const u2 = node('u2', 'user', { predecessor: 'l1', metadata: { checkpoint: { id: 't', changed: 0 } } });
  const u3 = node('u3', 'user', { predecessor: 'u2', metadata: { workspace_changes: [{ path: 'a', change: 'added' }] } });
  const sr = node('sr', 'user', { caller: 'l1', predecessor: null, metadata: { workspace_changes: [{ path: 'b', change: 'added' }] } });
  const files = Object.fromEntries(layoutGraph([u1, l1, u2, u3, sr]).nodes.map((n) => [n.id, n.files]));
  assert.deepEqual(files, { u1: 2, l1: 0, u2: 0, u3: 1, sr: 0 });
});

test('graph: a fork opens a lane, a spawn branch hangs from its caller, the chain stays in its lane', () => {
  seq = 0;
  const u1 = node('u1', 'user');
  const l1 = node('l1', 'llm', { caller: 'u1', predecessor: 'u1' });
  const sp = node('sp', 'code', { name: 'spawn_agent', caller: 'l1', predecessor: 'l1' });
  const sr = node('sr', 'user', { caller: 'sp', predecessor: null, name: 'sub-1' });
  const sl = node('sl', 'llm', { caller: 'sr', predecessor: 'sr', status: 'error' });
  const u2 = node('u2', 'user', { predecessor: 'sp' });
  const f1 = node('f1', 'user', { predecessor: 'l1' }); // a fork from l1 (second child)
  const g = layoutGraph([f1, u2, sl, sr, sp, l1, u1], ['u2', 'f1', 'sl']);
  const lane = Object.fromEntries(g.nodes.map((n) => [n.id, n.lane]));
  assert.deepEqual(g.nodes.map((n) => n.id), ['u1', 'l1', 'sp', 'sr', 'sl', 'u2', 'f1']);
  assert.equal(lane.l1, lane.u1);
  assert.equal(lane.sp, lane.u1);
  assert.equal(lane.u2, lane.u1);
  assert.notEqual(lane.sr, lane.u1);
  assert.equal(lane.sl, lane.sr);
  assert.notEqual(lane.f1, lane.u1);
  assert.notEqual(lane.f1, lane.sr);
  const kinds = Object.fromEntries(g.edges.map((e) => [`${e.from}>${e.to}`, e.kind]));
  assert.deepEqual(kinds, { 'u1>l1': 'chain', 'l1>sp': 'chain', 'sp>sr': 'spawn', 'sr>sl': 'chain', 'sp>u2': 'chain', 'l1>f1': 'fork' });
  assert.deepEqual(g.nodes.filter((n) => n.head).map((n) => n.id).sort(), ['f1', 'sl', 'u2']);
  assert.equal(g.lanes, 3);
});

// seeded PRNG: the invariants below hold for any DAG the store can hold
function rng(seed) { return () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff); }

test('graph invariants on random session DAGs: edges go down, a lane holds no node between a chain edge\'s ends', () => {
  for (let trial = 0; trial < 200; trial++) {
    const r = rng(trial + 1);
    const nodes = [];
    const count = 1 + Math.floor(r() * 60);
    for (let i = 0; i < count; i++) {
      const id = `n${i}`;
      if (i === 0) { nodes.push({ ...node(id, 'user'), seq: i + 1 }); continue; }
      const parent = nodes[Math.floor(r() * nodes.length)];
      const spawn = r() < 0.15;
      nodes.push({ ...node(id, ['user', 'llm', 'code'][Math.floor(r() * 3)], spawn
        ? { caller: parent.id, predecessor: null } : { caller: 'ROOT', predecessor: parent.id }), seq: i + 1 });
    }
    const g = layoutGraph(nodes.slice().reverse());
    assert.equal(g.nodes.length, count);
    const at = new Map(g.nodes.map((n) => [n.id, n]));
    const rowsByLane = new Map();
    for (const n of g.nodes) rowsByLane.set(n.lane, [...(rowsByLane.get(n.lane) ?? []), n.row]);
    for (const e of g.edges) {
      const a = at.get(e.from), b = at.get(e.to);
      assert.ok(a.row < b.row, `edge ${e.from}>${e.to} goes up`);
      if (e.kind === 'chain') {
        assert.equal(a.lane, b.lane);
        for (const row of rowsByLane.get(a.lane)) assert.ok(row <= a.row || row >= b.row, `lane ${a.lane} crosses a node`);
      }
    }
    assert.equal(g.edges.length, count - 1);
    assert.equal(new Set(g.nodes.map((n) => n.row)).size, count);
  }
});

test('chat: turns, streamed text, tool calls with results, sub-agents, errors and workspace changes', () => {
  seq = 0;
  const sys = node('sys', 'code', { name: 'context/system_prompt' });
  const u = node('u', 'user', { output: 'write it', predecessor: 'sys' });
  const l = node('l', 'llm', { caller: 'u', predecessor: 'u', status: 'running', output: null });
  const m = new ChatModel([sys, u, l]);
  m.delta('l', 'Hel');
  m.delta('l', 'lo');
  let items = m.items();
  assert.deepEqual(items.map((i) => [i.kind, i.text]), [['user', 'write it'], ['assistant', 'Hello']]);
  m.upsert({ ...l, status: 'completed', output: 'Hello.' });
  const t = node('t', 'code', { name: 'write_file', caller: 'l', predecessor: 'l', input: { path: 'a.txt' }, output: 'wrote 3 bytes', metadata: { tool_call_id: 'c1' } });
  const s = node('s', 'code', { name: 'spawn_agent', caller: 'l', predecessor: 't', input: { task: 'look around' }, status: 'running', metadata: { tool_call_id: 'c2' } });
  m.upsert(t);
  m.upsert(s);
  items = m.items();
  assert.equal(items[1].text, 'Hello.');
  assert.deepEqual(items[1].tools.map((x) => [x.name, x.output]), [['write_file', 'wrote 3 bytes'], ['spawn_agent', '']]);
  assert.deepEqual(items[1].subagents.map((x) => [x.task, x.status]), [['look around', 'running']]);
  m.upsert({ ...s, status: 'completed', metadata: { tool_call_id: 'c2', attached: { status: 'completed', result: 'all good', branch_root: 'sr' } } });
  assert.deepEqual(m.items()[1].subagents.map((x) => [x.status, x.result]), [['completed', 'all good']]);
  m.patch('u', { metadata: { workspace_changes: [{ path: 'a.txt', change: 'added' }] } });
  assert.deepEqual(m.items()[0].changes, [{ path: 'a.txt', change: 'added' }]);
  const e = node('e', 'llm', { caller: 'u', predecessor: 's', status: 'error', output: null, metadata: { error: { type: 'ProviderError', message: 'boom' } } });
  m.upsert(e);
  assert.equal(m.items()[2].error, 'ProviderError: boom');
  // a sub-agent's own model call (caller: the spawn root, not a ROOT-level turn) stays out of the chat
  m.upsert(node('sr', 'user', { caller: 's', predecessor: null }));
  m.upsert(node('sl', 'llm', { caller: 'sr', predecessor: 'sr' }));
  assert.equal(m.items().length, 3);
});

test('chat: a compaction\'s summary (beside the chain) is no message: the live chat equals the reloaded one', () => {
  // session/compact appends llm "context/summary" (caller ROOT) whose predecessor is the covered run's, and
  // HEAD stays: get_branch never gives it, its did_change append does
  seq = 0;
  const sys = node('sys', 'code', { name: 'context/system_prompt' });
  const u = node('u', 'user', { output: 'remember this', predecessor: 'sys' });
  const l = node('l', 'llm', { caller: 'u', predecessor: 'u', output: 'Noted for the summary.' });
  const live = new ChatModel([sys, u, l]);
  const summary = node('sum', 'llm', { name: 'context/summary', predecessor: 'sys', output: 'the user greeted', metadata: { covers_ids: ['u', 'l'] } });
  live.apply([{ kind: 'append', node: summary }]);
  assert.deepEqual(live.items(), new ChatModel([sys, u, l]).items());
  assert.equal(live.items().at(-1).id, 'l'); // a note after the last message (a refused prompt's error) follows a message that stays
  assert.equal(live.has('sum'), false);
});

// The chat's reload as ChatPanel.load does it: get_branch under a HeardDuring window, then the changes heard
// meanwhile applied on top of its answer. `during(hear)` runs while the read is under way (it hears
// changes) and returns the nodes the daemon read.
async function reloadChat(during) {
  const reads = new HeardDuring();
  let release;
  const gate = new Promise((r) => { release = r; });
  const loading = reads.read(() => gate);
  release({ nodes: during((p) => reads.hear(p)) });
  const { value, heard } = await loading;
  reads.hear({ session_id: 's', changes: [] }); // after the read: not kept
  const m = new ChatModel(value.nodes);
  for (const p of heard) m.apply(p.changes);
  return { m, heard };
}

test('chat reload: an update heard while get_branch is under way is not lost to an older answer', async () => {
  // the sub-agent's follow-up turn: its reply finishes (did_change update) while the chat reloads, and the
  // daemon answers get_branch with what it read before the update: the reply still running, no text
  seq = 0;
  const notice = node('f', 'user', { output: "[sub-agent 'counter' finished: completed]", metadata: { source: 'task_followup' } });
  const reply = node('r', 'llm', { caller: 'f', predecessor: 'f', status: 'running', output: null });
  const { m, heard } = await reloadChat((hear) => {
    hear({ session_id: 's', changes: [{ kind: 'update', node_id: 'r', fields: { output: 'The sub-agent reports 3 files.', status: 'completed' } }] });
    return [notice, reply];
  });
  assert.equal(heard.length, 1);
  assert.deepEqual(m.items().map((i) => [i.kind, i.status, i.text]),
    [['followup', 'completed', "[sub-agent 'counter' finished: completed]"], ['assistant', 'completed', 'The sub-agent reports 3 files.']]);
  // the answer alone (what the chat installed before): the reply stays running with no text
  assert.deepEqual(new ChatModel([notice, reply]).items().map((i) => [i.status, i.text]), [['completed', notice.output], ['running', '']]);
});

test('chat reload: wherever the daemon read its answer, the chat ends as the whole history says', async () => {
  for (let trial = 0; trial < 300; trial++) {
    const r = rng(trial + 7);
    // a history of appends and updates (output, status, metadata), each a did_change, delivered in order
    seq = 0;
    const events = [];
    const ids = [];
    for (let i = 0, n = 2 + Math.floor(r() * 14); i < n; i++) {
      if (!ids.length || r() < 0.4) {
        const id = `n${i}`;
        const llm = ids.length % 2 === 1;
        events.push({ kind: 'append', node: node(id, llm ? 'llm' : 'user', llm ? { caller: ids[ids.length - 1], status: 'running', output: null } : { output: `ask ${i}` }) });
        ids.push(id);
      } else {
        const fields = r() < 0.5 ? { output: `text ${i}`, status: r() < 0.5 ? 'completed' : 'error' } : { metadata: { [`k${i % 3}`]: i } };
        events.push({ kind: 'update', node_id: ids[Math.floor(r() * ids.length)], fields });
      }
    }
    // the daemon's nodes after the first k events (an update sets its fields, merges its metadata)
    const daemonAfter = (k) => {
      const nodes = new Map();
      for (const ev of events.slice(0, k)) {
        if (ev.kind === 'append') { nodes.set(ev.node.id, ev.node); continue; }
        const n = nodes.get(ev.node_id);
        nodes.set(n.id, { ...n, ...ev.fields, metadata: { ...n.metadata, ...(ev.fields.metadata ?? {}) } });
      }
      return [...nodes.values()];
    };
    // events before w0 came before the reload, [w0, w1) while it was under way, the rest after it; the
    // daemon read its answer after k of them (k >= w0: the read was sent after event w0 - 1 came)
    const w0 = Math.floor(r() * (events.length + 1));
    const w1 = w0 + Math.floor(r() * (events.length - w0 + 1));
    const k = w0 + Math.floor(r() * (events.length - w0 + 1));
    const { m } = await reloadChat((hear) => {
      for (const ch of events.slice(w0, w1)) hear({ session_id: 's', changes: [ch] });
      return daemonAfter(k);
    });
    m.apply(events.slice(w1)); // heard after the reload: applied live
    assert.deepEqual(m.items(), new ChatModel(daemonAfter(events.length)).items(), `trial ${trial}: w0=${w0} w1=${w1} k=${k}`);
  }
});

test('chat webview: what is posted before its script listens waits for its ready, in order; a later ready resends', () => {
  // a webview as VS Code runs one: a message posted while its document loads is dropped
  const webview = () => { const got = []; let listening = false; return { got, load() { listening = true; }, postMessage(m) { if (listening) got.push(m); } }; };
  const direct = webview();
  direct.postMessage({ type: 'session' });
  direct.load();
  assert.deepEqual(direct.got, []); // what the chat did: a chat opened again stayed empty
  const w = webview();
  let resent = 0;
  const gate = new PostGate((m) => w.postMessage(m), () => { resent++; gate.post({ type: 'items', again: true }); });
  gate.post({ type: 'session' });
  gate.post({ type: 'items', n: 1 });
  w.load();
  gate.ready(); // the script's first message
  gate.post({ type: 'delta' });
  assert.deepEqual(w.got.map((m) => m.type), ['session', 'items', 'delta']);
  assert.equal(resent, 0);
  gate.ready(); // its document was loaded again: the state is posted once more
  assert.equal(resent, 1);
  assert.deepEqual(w.got.at(-1), { type: 'items', again: true });
});

// session/get_branch paging as docs/protocol.md specifies it, over an in-memory branch store (heads → chains)
function pagedBranches(chains) {
  const calls = [];
  const fetch = async ({ head_id, limit, before, after, order = 'asc' }) => {
    calls.push({ head_id, limit, before, after, order });
    const chain = chains.get(head_id);
    if (!chain) throw new Error(`no branch ${head_id}`);
    const ids = chain.map((n) => n.id);
    for (const c of [before, after]) if (c !== undefined && !ids.includes(c)) throw Object.assign(new Error('invalid_cursor'), { kind: 'invalid_cursor' });
    let lo = after === undefined ? 0 : ids.indexOf(after) + 1;
    let hi = before === undefined ? chain.length : ids.indexOf(before);
    let window = chain.slice(lo, hi);
    if (order === 'desc') window = window.reverse();
    const page = limit === undefined ? window : window.slice(0, limit);
    const more = page.length < window.length;
    return { nodes: page, head_id, next_cursor: more ? page[page.length - 1].id : null, total: chain.length };
  };
  return { fetch, calls };
}
const chainOf = (n, prefix = 'n') => Array.from({ length: n }, (_, i) => node(`${prefix}${i}`, i % 2 ? 'llm' : 'user'));

test('tree paging: the newest page first, then older pages, pinned to the first head; refresh keeps what was loaded', async () => {
  seq = 0;
  const chain = chainOf(25);
  const { fetch, calls } = pagedBranches(new Map([['n24', chain]]));
  const p = new BranchPager('n24', 10);
  await p.loadNewest(fetch);
  assert.deepEqual(p.nodes.map((n) => n.id), chain.slice(15).map((n) => n.id)); // branch order, the tail
  assert.equal(p.total, 25);
  assert.equal(p.older, 15);
  assert.ok(p.hasOlder);
  assert.deepEqual(calls[0], { head_id: 'n24', limit: 10, before: undefined, after: undefined, order: 'desc' });
  assert.equal(await p.loadOlder(fetch), 10);
  assert.deepEqual(calls[1], { head_id: 'n24', limit: 10, before: 'n15', after: undefined, order: 'desc' });
  assert.equal(p.older, 5);
  assert.equal(await p.loadOlder(fetch), 5);
  assert.equal(p.hasOlder, false);
  assert.equal(p.older, 0);
  assert.equal(await p.loadOlder(fetch), 0);
  assert.equal(calls.length, 3); // nothing fetched past the start
  assert.deepEqual(p.nodes.map((n) => n.id), chain.map((n) => n.id));
  // a refresh after a change re-reads the newest page, as many nodes as were shown
  const again = new BranchPager('n24', 10);
  await again.loadNewest(fetch, p.nodes.length);
  assert.equal(again.nodes.length, 25);
  assert.equal(again.hasOlder, false);
  const row = olderRow('s', 'n24', 15, 10);
  assert.equal(row.kind, 'older');
  assert.match(row.label, /15 more/);
  assert.equal(row.description, 'next 10');
});

test('tree paging: loadUntil reaches an old node; a node off the branch loads to the start and says so', async () => {
  seq = 0;
  const chain = chainOf(30);
  const { fetch } = pagedBranches(new Map([['n29', chain]]));
  const p = new BranchPager('n29', 7);
  await p.loadNewest(fetch);
  assert.equal(await p.loadUntil(fetch, 'n3'), true);
  assert.ok(p.nodes.some((n) => n.id === 'n3'));
  assert.equal(p.nodes[p.nodes.length - 1].id, 'n29');
  assert.equal(await p.loadUntil(fetch, 'elsewhere'), false);
  assert.equal(p.nodes.length, 30);
  assert.throws(() => new BranchPager('x', 0), RangeError);
});

test('tree paging: for any branch length and page size, the pages concatenate to exactly the branch', async () => {
  let state = 7;
  const rand = (n) => { state = (state * 1103515245 + 12345) % 2147483648; return state % n; };
  for (let k = 0; k < 300; k++) {
    seq = 0;
    const len = rand(60);
    const size = 1 + rand(12);
    const chain = chainOf(len);
    const head = len ? chain[len - 1].id : 'ROOT';
    const { fetch, calls } = pagedBranches(new Map([[head, chain]]));
    const p = new BranchPager(head, size);
    await p.loadNewest(fetch);
    assert.equal(p.nodes.length, Math.min(len, size));
    assert.equal(p.older + p.nodes.length, len);
    let pages = 1;
    while (await p.loadOlder(fetch)) pages++;
    assert.deepEqual(p.nodes.map((n) => n.id), chain.map((n) => n.id), `len ${len} size ${size}`);
    assert.equal(pages, Math.max(1, Math.ceil(len / size)));
    assert.equal(calls.length, pages);
    assert.ok(calls.every((c) => c.head_id === head && c.order === 'desc' && c.limit === size));
  }
});

test('usage: cost texts, branch rows with their own cost, the breakdown markdown', () => {
  const { costText, costsByHead } = require('../dist/model/treeModel.js');
  const { usageMarkdown } = require('../dist/model/usageReport.js');
  assert.equal(costText({ calls: 2, cost_usd: 0.01234, priced_cost_usd: 0.01234 }), '$0.0123');
  assert.equal(costText({ calls: 2, cost_usd: null, priced_cost_usd: 0 }), 'unknown');
  assert.equal(costText({ calls: 2, cost_usd: null, priced_cost_usd: 0.5 }), '$0.5000+?');
  assert.equal(costText({ calls: 0, cost_usd: 0, priced_cost_usd: 0 }), undefined);
  const costs = costsByHead([{ head_id: 'aaaaaaaaaa', calls: 1, cost_usd: 0.002, priced_cost_usd: 0.002 }],
    [{ head_id: 'bbbbbbbbbb', calls: 1, cost_usd: null, priced_cost_usd: 0 }, { head_id: null, calls: 1, cost_usd: 1, priced_cost_usd: 1 }]);
  assert.deepEqual(costs, { aaaaaaaaaa: '$0.0020', bbbbbbbbbb: 'unknown' });
  const rows = branchRows('s', [{ head_id: 'aaaaaaaaaa', name: null, main: true, current: true, spawn_root: null, status: 'completed', seq: 3 }], costs);
  assert.equal(rows[0].description, '● current · @aaaaaaaa · $0.0020');
  const t = { calls: 3, input_tokens: 30, output_tokens: 6, cached_tokens: 0, reasoning_tokens: 0, latency_ms: 1500,
    cost_usd: 0.003, priced_cost_usd: 0.003 };
  const md = usageMarkdown('s-1', [
    { by: 'branch', rows: [{ key: 'x', head_id: 'aaaaaaaaaa', name: 'main', ...t }], total: t },
    { by: 'subagent', rows: [{ key: null, ...t }], total: t },
  ]);
  assert.match(md, /## By branch/);
  assert.match(md, /\| aaaaaaaa main \| 3 \| 30 \| 0 \| 6 \| 0 \| 1\.5 s \| \$0\.0030 \|/);
  assert.match(md, /\| \(main agent\) \|/);
  assert.equal(md.match(/\*\*TOTAL\*\*/g).length, 2);
});
