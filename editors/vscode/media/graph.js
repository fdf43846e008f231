// The graph webview: draws the laid-out DAG as SVG (one row per node, one column per lane).
(function () {
  const vscode = acquireVsCodeApi();
  const svg = document.getElementById('svg');
  const NS = 'http://www.w3.org/2000/svg';
  const DX = 22, DY = 24, X0 = 16, Y0 = 16;
  const COLORS = { user: '#4aa3ff', llm: '#3fb950', code: '#a371f7' };
  let selected;

  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  };

  function draw(m) {
    const { layout, current } = m;
    const pos = new Map(layout.nodes.map((n) => [n.id, n]));
    const xOf = (n) => X0 + n.lane * DX, yOf = (n) => Y0 + n.row * DY;
    const textX = X0 + layout.lanes * DX + 8;
    svg.setAttribute('width', String(textX + 420));
    svg.setAttribute('height', String(Y0 * 2 + layout.rows * DY));
    const edges = mk('g', { class: 'edges' });
    for (const e of layout.edges) {
      const a = pos.get(e.from), b = pos.get(e.to);
      if (!a || !b) continue;
      const d = a.lane === b.lane ? `M${xOf(a)},${yOf(a)} L${xOf(b)},${yOf(b)}`
        : `M${xOf(a)},${yOf(a)} C${xOf(b)},${yOf(a)} ${xOf(b)},${yOf(a)} ${xOf(b)},${yOf(a) + DY / 2} L${xOf(b)},${yOf(b)}`;
      edges.appendChild(mk('path', { d, fill: 'none', stroke: e.kind === 'spawn' ? '#a371f7' : '#8b949e', 'stroke-width': 2,
        'stroke-dasharray': e.kind === 'spawn' ? '4 3' : '', class: `edge ${e.kind}` }));
    }
    const nodes = mk('g', { class: 'nodes' });
    for (const n of layout.nodes) {
      const g = mk('g', { class: `node role-${n.role} status-${n.status}${n.head ? ' head' : ''}`, 'data-id': n.id });
      const color = n.status === 'error' ? '#f85149' : COLORS[n.role] || '#8b949e';
      g.appendChild(mk('circle', { cx: xOf(n), cy: yOf(n), r: n.head ? 7 : 5, fill: n.status === 'running' ? 'none' : color, stroke: color, 'stroke-width': 2 }));
      const label = `${n.label}${n.head ? (n.id === current ? '  ◀ HEAD' : '  ◀ branch') : ''}`;
      g.appendChild(mk('text', { x: textX, y: yOf(n) + 4 }, label));
      g.appendChild(mk('title', {}, `${n.role} ${n.name} · ${n.status} · #${n.seq} · ${n.id}`));
      g.addEventListener('click', () => { select(n.id); vscode.postMessage({ type: 'select', id: n.id }); });
      nodes.appendChild(g);
    }
    svg.replaceChildren(edges, nodes);
    document.getElementById('title').textContent = `session ${m.sessionId} · ${layout.nodes.length} nodes · ${layout.lanes} lanes`;
    if (selected) select(selected);
    requestAnimationFrame(() => vscode.postMessage({ type: 'drawn', nodes: layout.nodes.length, at: Date.now() }));
  }

  function select(id) {
    selected = id;
    for (const x of svg.querySelectorAll('.sel')) x.classList.remove('sel');
    const g = svg.querySelector(`[data-id="${id}"]`);
    if (g) { g.classList.add('sel'); g.scrollIntoView({ block: 'nearest' }); }
  }

  window.addEventListener('message', (ev) => {
    if (ev.data.type === 'layout') draw(ev.data);
    else if (ev.data.type === 'select') select(ev.data.id);
  });
})();
