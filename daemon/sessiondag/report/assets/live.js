/* sessiondag live viewer (`sessiondag view`, report/bridge.py): the data source over the bridge and
   the patches it sends (report/live.py). A patch changes only what it names: rows' columns and
   bodies, segments, streamed text, summaries, branches, usage; the page then redraws the graph rows
   in view and, in the chat of the selected branch, the turns that changed or were added. Patches
   are applied one at a time, in order; every one is idempotent (a patch seen twice changes
   nothing). Loaded before viewer.js, in the live page only. */
"use strict";
const SDLive = (() => {
  const COLS = ["id", "seq", "role", "status", "name", "parent", "seg", "flags", "snip"];
  const HEAD = 4, SNIP = 72;
  const now = () => performance.timeOrigin + performance.now();

  class LiveSource {
    constructor(cfg) { this.base = cfg.base || "./"; this.version = 0; }
    async get(path) {
      const r = await fetch(this.base + path, { credentials: "same-origin", cache: "no-store" });
      if (!r.ok) throw new Error(path + ": HTTP " + r.status);
      return r.json();
    }
    async doc() { const d = await this.get("doc"); this.version = d.version || 0; return d; }
    chunk(i) { return this.get("chunk/" + i + "?v=" + this.version); }
    onChange(onPatch, onReset, state) {
      const es = new EventSource(this.base + "events?since=" + this.version);
      es.addEventListener("patch", (e) => onPatch(JSON.parse(e.data), now()));
      es.addEventListener("reset", (e) => onReset(JSON.parse(e.data || "{}").why));
      es.onopen = () => state("● live");
      es.onerror = () => state("○ reconnecting…");
      this.es = es;
    }
  }

  const snip = (t) => { t = t.replace(/\s+/g, " ").trim(); return t.length <= SNIP ? t : t.slice(0, SNIP - 1) + "…"; };
  const textOf = (v) => (v == null ? "" : typeof v === "string" ? v : String(v.text ?? ""));

  // the body cache: a loaded (or loading) chunk gets the new body; a chunk this page never read is
  // fetched when needed, unless it is new (its first row arrives in the patch)
  function setBody(v, r, b, oldN) {
    const cs = v.d.chunk_size, k = Math.floor(r / cs), i = r % cs, c = v.chunks.get(k);
    if (c) v.chunks.set(k, c.then((arr) => { arr[i] = b; return arr; }));
    else if (i === 0 && r >= oldN) v.chunks.set(k, Promise.resolve([b]));
  }

  async function apply(v, p, arrived) {
    if (p.v <= v.version) return;
    v.version = p.v;
    const d = v.d, R = v.R, oldN = v.n;
    const touched = new Set();
    for (const row of p.rows || []) {
      const r = row[0];
      COLS.forEach((k, j) => { R[k][r] = row[j + 1]; });
      touched.add(r);
      if (row[8] & HEAD) v.headRow = r;
    }
    if (p.n != null) v.n = p.n;
    for (const [r, b] of p.bodies || []) setBody(v, r, b, oldN);
    for (const [i, ...x] of p.segs || []) d.segs[i] = x;
    if (p.lanes) d.lanes = p.lanes;
    if (p.meta) d.meta = p.meta;
    if (p.summaries) {
      d.summaries = p.summaries;
      v.summaryAt = new Map();
      for (const s of d.summaries) if (s[1] >= 0) v.summaryAt.set(s[1], s);
    }
    if (p.branches) { d.branches = p.branches; v.branchAt = new Map(d.branches.map((b) => [b.row, b])); }
    if (p.usage) d.usage = p.usage;
    if (p.meta || p.branches || p.usage) v.header(!p.branches);
    const texts = [];
    for (const [r, at, s] of p.text || []) {
      const b = await v.body(r);
      if (!b) continue;
      b.text = textOf(b.text).slice(0, at) + s;
      R.snip[r] = snip(b.text);
      texts.push(r);
    }
    await chat(v, touched, oldN);
    for (const r of texts) if (!touched.has(r)) v.retext(r);
    v.drawGraph(true);
    const t = now();
    for (let r = oldN; r < v.n; r++) { v.seen[R.id[r]] = t; v.arrived[R.id[r]] = arrived ?? t; }
    for (const r of texts) (v.textSeen[R.id[r]] ||= []).push([t, textOf((await v.body(r)).text).length]);
    if (p.branches && v.tip != null) v.branchHead();
  }

  // the chat of the selected branch: follow HEAD's branch (when it was on it), grow the path when its
  // tip moved on, re-render only the turns that changed
  async function chat(v, touched, oldN) {
    if (v.headRow < 0 && v.n > 0) v.headRow = v.n - 1;
    const target = v.follow && v.headRow >= 0 ? v.headRow : v.sel;
    if (target < 0) { if (v.n > 0) await v.select(v.n - 1, { bottom: true }); return; }
    const tip = v.d.segs[v.R.seg[target]][1];
    if (tip !== v.tip) {
      const path = v.pathTo(tip), old = v.path;
      if (!old.length || path[old.length - 1] !== old[old.length - 1]) {   // another branch: open it
        await v.select(target, { bottom: true, scrollGraph: true });
        return;
      }
      const chatEl = document.getElementById("chat");
      const atEnd = v.hi === old.length, atBottom = chatEl.scrollTop + chatEl.clientHeight >= chatEl.scrollHeight - 40;
      v.path = path; v.tip = tip;
      if (v.follow) { v.sel = target; v.scrollGraphTo(target); }
      const marked = chatEl.querySelector(".turn.sel");
      if (v.follow && marked) marked.classList.remove("sel");
      if (atEnd) {
        const frag = document.createDocumentFragment();
        for (let i = old.length; i < path.length; i++) { touched.delete(path[i]); frag.appendChild(await v.turnBlock(path[i])); }
        chatEl.insertBefore(frag, v.bottom);
        v.hi = path.length;
        chatEl.dataset.rows = String(v.hi - v.lo);
        if (atBottom) chatEl.scrollTop = chatEl.scrollHeight;
      }
      if (v.follow) document.getElementById("row-" + target)?.classList.add("sel");
      v.bottom.hidden = v.hi === path.length;
      v.branchHead();
    }
    for (const r of touched) {
      const old = document.getElementById("row-" + r);
      if (!old || !old.parentNode) continue;
      const open = [...old.querySelectorAll("details[open]")].map(key);
      const fresh = await v.turnEl(r);
      for (const e of fresh.querySelectorAll("details")) if (open.includes(key(e))) e.open = true;
      if (old.classList.contains("sel")) fresh.classList.add("sel");
      old.replaceWith(fresh);
    }
  }
  const key = (e) => e.dataset.call || e.dataset.spawn || e.dataset.summary || e.className;

  return { LiveSource, apply };
})();
