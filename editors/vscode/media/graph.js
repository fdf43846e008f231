// The graph webview: draws the laid-out DAG as SVG (one row per node, one column per lane). Only the rows
// in view (plus a margin) are drawn, so a 2,000-node session costs what a screenful does; scrolling redraws.
(function () {
  const scriptAt = Date.now();
  let receivedAt = 0;
  const vscode = acquireVsCodeApi();
  const wrap = document.getElementById('wrap');
  const svg = document.getElementById('svg');
  const NS = 'http://www.w3.org/2000/svg';
  const DX = 22, DY = 24, X0 = 16, Y0 = 16, MARGIN = 20;
  const COLORS = { user: '#4aa3ff', llm: '#3fb950', code: '#a371f7' };
  let state; // { layout, current, pos: Map, byRow: [] , sessionId }
  let selected;
  let pending = false;

  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const xOf = (n) => X0 + n.lane * DX;
  const yOf = (n) => Y0 + n.row * DY;

  function load(m) {
    const { layout } = m;
    state = { ...m, pos: new Map(layout.nodes.map((n) => [n.id, n])), byRow: layout.nodes };
    svg.setAttribute('width', String(X0 + layout.lanes * DX + 8 + 420));
    svg.setAttribute('height', String(Y0 * 2 + layout.rows * DY));
    document.getElementById('title').textContent = `session ${m.sessionId} · ${layout.nodes.length} nodes · ${layout.lanes} lanes`;
    draw();
    if (selected) select(selected, false);
    // the next frame paints the drawing; the timer after it runs once that frame is done
    requestAnimationFrame(() => setTimeout(() => vscode.postMessage({ type: 'drawn', nodes: layout.nodes.length, at: Date.now(), script: scriptAt, origin: performance.timeOrigin, received: receivedAt }), 0));
  }

  function draw() {
    if (!state) return;
    const { layout, current, pos, byRow } = state;
    const first = Math.max(0, Math.floor((wrap.scrollTop - Y0) / DY) - MARGIN);
    const last = Math.min(layout.rows - 1, Math.ceil((wrap.scrollTop + wrap.clientHeight) / DY) + MARGIN);
    const textX = X0 + layout.lanes * DX + 8;
    const edges = mk('g', { class: 'edges' });
    for (const e of layout.edges) {
      const a = pos.get(e.from), b = pos.get(e.to);
      if (!a || !b || a.row > last || b.row < first) continue;
      const d = a.lane === b.lane ? `M${xOf(a)},${yOf(a)} L${xOf(b)},${yOf(b)}`
        : `M${xOf(a)},${yOf(a)} C${xOf(b)},${yOf(a)} ${xOf(b)},${yOf(a)} ${xOf(b)},${yOf(a) + DY / 2} L${xOf(b)},${yOf(b)}`;
      edges.appendChild(mk('path', { d, fill: 'none', stroke: e.kind === 'spawn' ? '#a371f7' : '#8b949e', 'stroke-width': 2,
        'stroke-dasharray': e.kind === 'spawn' ? '4 3' : '', class: `edge ${e.kind}` }));
    }
    const nodes = mk('g', { class: 'nodes' });
    for (let r = first; r <= last; r++) {
      const n = byRow[r];
      const g = mk('g', { class: `node role-${n.role} status-${n.status}${n.head ? ' head' : ''}${n.files ? ' files' : ''}${n.id === selected ? ' sel' : ''}`, 'data-id': n.id });
      const color = n.status === 'error' ? '#f85149' : COLORS[n.role] || '#8b949e';
      g.appendChild(mk('circle', { cx: xOf(n), cy: yOf(n), r: n.head ? 7 : 5, fill: n.status === 'running' ? 'none' : color, stroke: color, 'stroke-width': 2 }));
      const label = `${n.label}${n.head ? (n.id === current ? '  ◀ HEAD' : '  ◀ branch') : ''}`;
      g.appendChild(mk('text', { x: textX, y: yOf(n) + 4 }, label));
      if (n.files) g.appendChild(mk('rect', { class: 'files-mark', x: xOf(n) + 7, y: yOf(n) - 9, width: 6, height: 6, fill: '#d29922' }));
      g.appendChild(mk('title', {}, `${n.role} ${n.name} · ${n.status} · #${n.seq} · ${n.id}${n.files ? ` · ${n.files} file(s) changed` : ''}`));
      g.addEventListener('click', () => { select(n.id, false); vscode.postMessage({ type: 'select', id: n.id }); });
      nodes.appendChild(g);
    }
    svg.replaceChildren(edges, nodes);
  }

  function select(id, scroll = true) {
    selected = id;
    const n = state && state.pos.get(id);
    if (n && scroll && (yOf(n) < wrap.scrollTop || yOf(n) > wrap.scrollTop + wrap.clientHeight)) {
      wrap.scrollTop = Math.max(0, yOf(n) - wrap.clientHeight / 2);
    }
    draw();
  }

  wrap.addEventListener('scroll', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  });
  window.addEventListener('resize', () => draw());
  window.addEventListener('message', (ev) => {
    if (ev.data.type === 'layout') { receivedAt = Date.now(); load(ev.data); }
    else if (ev.data.type === 'select') select(ev.data.id);
    else if (ev.data.type === 'clear') {
      state = undefined;
      svg.replaceChildren();
      document.getElementById('title').textContent = 'no session: open one in the Sessions view';
    }
  });
})();
