// The chat webview: renders ChatItems sent by the extension, appends streamed deltas, sends prompts.
(function () {
  const vscode = acquireVsCodeApi();
  const log = document.getElementById('log');
  const input = document.getElementById('input');
  const send = document.getElementById('send');
  const stop = document.getElementById('stop');
  const state = document.getElementById('state');
  let running = false;
  let notes = []; // errors and notices of this session: kept across re-renders, never swallowed

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fmt = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

  function setRunning(r) {
    running = r;
    stop.disabled = !r;
    send.disabled = r;
    state.textContent = r ? 'running…' : '';
  }

  function item(it) {
    const box = el('div', `msg ${it.kind} status-${it.status}`);
    box.dataset.id = it.id;
    box.appendChild(el('div', 'who', it.kind === 'user' ? 'You' : it.kind === 'assistant' ? 'Agent' : 'Sub-agent finished'));
    box.addEventListener('click', () => vscode.postMessage({ type: 'select', id: it.id }));
    const text = el('div', 'text', it.text);
    box.appendChild(text);
    if (it.cost) box.appendChild(el('div', 'cost', `turn cost: ${it.cost}`));
    if (it.kind === 'user' && it.id !== 'pending') { // the turn's checkpoint: its files, back or beside now
      const acts = el('div', 'checkpoint');
      for (const [type, label] of [['restore', 'Restore files to here'], ['compare', 'Compare with current']]) {
        const a = el('a', type, label);
        a.href = '#';
        a.title = type === 'restore' ? 'Put the files back as they were at the end of this turn (undoable)'
          : 'A diff editor per file that differs between the end of this turn and now';
        a.addEventListener('click', (e) => { e.preventDefault(); e.stopPropagation(); vscode.postMessage({ type, id: it.id }); });
        acts.appendChild(a);
      }
      box.appendChild(acts);
    }
    for (const t of it.tools) {
      const d = el('details', `tool status-${t.status}`);
      d.dataset.id = t.id;
      d.appendChild(el('summary', '', `tool ${t.name} — ${t.status}`));
      d.appendChild(el('pre', 'args', fmt(t.input)));
      d.appendChild(el('pre', 'result', fmt(t.output)));
      box.appendChild(d);
    }
    for (const s of it.subagents) {
      const d = el('details', `subagent status-${s.status}`);
      d.open = true;
      d.appendChild(el('summary', '', `sub-agent: ${s.task} — ${s.status}`));
      if (s.result) d.appendChild(el('div', 'text', s.result));
      box.appendChild(d);
    }
    if (it.error) box.appendChild(el('div', 'error', it.error));
    if (it.changes && it.changes.length) {
      const ul = el('ul', 'changes');
      ul.appendChild(el('li', 'changes-title', 'Files changed in this turn:'));
      for (const c of it.changes) {
        const li = el('li', `change ${c.change}`);
        const a = el('a', '', `${c.change}: ${c.path}`);
        a.href = '#';
        a.addEventListener('click', (e) => { e.preventDefault(); e.stopPropagation(); vscode.postMessage({ type: 'diff', path: c.path, change: c.change }); });
        li.appendChild(a);
        ul.appendChild(li);
      }
      box.appendChild(ul);
    }
    return box;
  }

  // the last message a note can follow: never the pending prompt (a prompt the daemon refuses makes no
  // node, so a note after it would be dropped with it at the next render, swallowing the error)
  const lastId = () => { const all = log.querySelectorAll('.msg[data-id]:not([data-id="pending"])'); return all.length ? all[all.length - 1].dataset.id : undefined; };

  function render(items) {
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
    // each note stays after the message it followed when it came
    const out = [];
    const placed = new Set();
    for (const it of items) {
      out.push(item(it));
      for (const n of notes) if (n.after === it.id) { out.push(n.el); placed.add(n); }
    }
    // a note whose message left the view belongs to another branch now (a retry, a fork, a checkout)
    notes = notes.filter((n) => placed.has(n) || n.after === undefined);
    for (const n of notes) if (!placed.has(n)) out.push(n.el);
    log.replaceChildren(...out);
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (m.type === 'items') { render(m.items); setRunning(m.running); }
    else if (m.type === 'session') {
      if (document.getElementById('session').dataset.id !== m.sessionId) notes = [];
      document.getElementById('session').dataset.id = m.sessionId;
      document.getElementById('session').textContent = m.sessionId ? `session ${m.sessionId}` : 'no session: a prompt starts a new one';
    }
    else if (m.type === 'running') setRunning(m.running);
    else if (m.type === 'delta') {
      let box = log.querySelector(`.msg[data-id="${m.id}"] .text`);
      if (!box) {
        const it = item({ id: m.id, kind: 'assistant', status: 'running', text: '', tools: [], subagents: [], changes: [] });
        log.appendChild(it);
        box = it.querySelector('.text');
      }
      box.textContent += m.text;
      log.scrollTop = log.scrollHeight;
      // the first token of a reply: report when it is on screen (after layout), for the latency bench
      if (m.first) {
        const dom = Date.now();
        requestAnimationFrame(() => vscode.postMessage({ type: 'shown', dom, shown: Date.now() }));
      }
    } else if (m.type === 'error') {
      const e = el('div', 'msg error-item');
      e.appendChild(el('div', 'who', `Error (${m.kind})`));
      e.appendChild(el('div', 'text', m.message));
      notes.push({ el: e, after: lastId() });
      log.appendChild(e);
      log.scrollTop = log.scrollHeight;
    } else if (m.type === 'notice') {
      const n = el('div', 'notice', m.text);
      notes.push({ el: n, after: lastId() });
      log.appendChild(n);
    } else if (m.type === 'highlight') {
      for (const x of log.querySelectorAll('.highlight')) x.classList.remove('highlight');
      const t = log.querySelector(`[data-id="${m.id}"]`);
      if (t) { t.classList.add('highlight'); t.scrollIntoView({ block: 'center' }); }
    }
  });

  document.getElementById('form').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || running) return;
    input.value = '';
    const mine = item({ id: 'pending', kind: 'user', status: 'running', text, tools: [], subagents: [], changes: [] });
    log.appendChild(mine);
    vscode.postMessage({ type: 'send', text });
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); document.getElementById('form').requestSubmit(); }
  });
  stop.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
  vscode.postMessage({ type: 'ready' }); // listening: the extension sends what it posted meanwhile
})();
