/* sessiondag report viewer: the DAG picture (virtualized SVG), the chat of the selected branch,
   search, copy as markdown, themes. Reads its data through one interface (doc(), chunk(i),
   onChange(…)) with two implementations: EmbeddedSource (the JSON in this file) and LiveSource
   (live.js: the `sessiondag view` bridge, whose patches live.js applies). Strings are always put
   in the page as text. */
"use strict";
(() => {
  const { el, render: md, diffLines } = SDMarkdown;
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const ROW_H = 24, LANE_W = 16, PAD = 12, OVERSCAN = 30, PAGE = 40, MAX_HITS = 300;
  const F = { SPAWN: 1, SUMMARY: 2, HEAD: 4, TURN: 8, COMPACTED: 16, CALLS: 32, CALL_ERROR: 64 };
  const EDGE_SPAWN = 2;
  const STATUS = { c: "completed", e: "error", x: "cancelled", r: "running" };

  class EmbeddedSource {
    constructor() {
      this.head = JSON.parse($("sd-doc").textContent);
      // the chunks after the viewer's script exist once the page is parsed
      this.parsed = document.readyState !== "loading" ? Promise.resolve()
        : new Promise((ok) => document.addEventListener("DOMContentLoaded", ok, { once: true }));
    }
    async doc() { return this.head; }
    async chunk(i) {
      let e = $("sd-chunk-" + i);
      if (!e) { await this.parsed; e = $("sd-chunk-" + i); }
      return e ? JSON.parse(e.textContent) : [];
    }
    onChange() {}
  }

  const svg = (tag, attrs, parent) => {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  const fieldText = (v) => (v == null ? "" : typeof v === "string" ? v : String(v.text ?? ""));
  const fmtTok = (n) => (n >= 10000 ? (n / 1000).toFixed(1) + "k" : String(n));
  const fmtMs = (ms) => (ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms + " ms");
  const fmtUsd = (x) => (x == null ? "cost unknown" : "$" + (x < 0.01 ? x.toFixed(4) : x.toFixed(2)));
  const fmtUsage = (u) => u ? `${fmtTok(u.input_tokens)} in · ${fmtTok(u.output_tokens)} out · ` +
    (u.cost_usd != null ? fmtUsd(u.cost_usd) : u.calls ? (u.priced_cost_usd ? fmtUsd(u.priced_cost_usd) + "+?" : "cost unknown") : "$0") : "";

  class Viewer {
    constructor(src) {
      this.src = src; this.chunks = new Map(); this.sel = -1; this.path = []; this.lo = 0; this.hi = 0;
      this.drawn = null; this.follow = true; this.version = 0; this.seen = {}; this.textSeen = {};
      this.arrived = {};     // live: when the patch that added a row arrived (sdSeen: when it was drawn)
      window.sdSeen = this.seen; window.sdTextSeen = this.textSeen; window.sdArrived = this.arrived;
    }
    async load() {
      const d = await this.src.doc();
      this.version = d.version || 0;
      this.d = d; this.R = d.rows; this.n = d.rows.id.length; this.chunks.clear(); this.drawn = null;
      this.summaryAt = new Map();
      for (const s of d.summaries || []) if (s[1] >= 0) this.summaryAt.set(s[1], s);
      this.branchAt = new Map(d.branches.map((b) => [b.row, b]));
      this.headRow = -1;
      for (let r = this.n - 1; r >= 0; r--) if (this.R.flags[r] & F.HEAD) { this.headRow = r; break; }
    }
    chunk(i) {
      if (!this.chunks.has(i)) this.chunks.set(i, this.src.chunk(i));
      return this.chunks.get(i);
    }
    async body(r) { const cs = this.d.chunk_size; return (await this.chunk(Math.floor(r / cs)))[r % cs]; }
    lane(r) { return this.d.segs[this.R.seg[r]][4]; }
    x(l) { return PAD + l * LANE_W + LANE_W / 2; }
    y(r) { return PAD + r * ROW_H + ROW_H / 2; }

    // --- header ---------------------------------------------------------------------------
    header(keepPicker) {
      const m = this.d.meta, t = this.d.usage.total;
      $("title").textContent = m.title;
      $("sid").textContent = m.session_id;
      $("totals").textContent = `${m.nodes} nodes · ${this.d.branches.length} branches · ${fmtUsage(t)}` +
        (m.redact_patterns ? ` · ${m.redact_patterns} redaction pattern(s)` : "");
      if (keepPicker) return;
      const sel = $("branches"); sel.textContent = "";
      this.d.branches.forEach((b, k) => {
        const kind = b.spawn ? "sub-agent " + (b.name || "")
          : b.name ? b.name + (b.main ? " (main)" : "") : b.main ? "main" : "branch";
        const o = el("option", null, `${kind} · #${this.R.seq[b.row] ?? "?"}${b.current ? " · HEAD" : ""}${b.status !== "completed" ? " · " + b.status : ""}`);
        o.value = String(b.row); sel.appendChild(o);
      });
    }

    // --- the graph ------------------------------------------------------------------------
    drawGraph(force) {
      const g = $("graph"), inner = $("graph-inner"), n = this.n;
      const width = PAD * 2 + this.d.lanes * LANE_W + 420;
      inner.style.height = n * ROW_H + PAD * 2 + "px"; inner.style.width = width + "px";
      const a = Math.max(0, Math.floor((g.scrollTop - PAD) / ROW_H) - OVERSCAN);
      const b = Math.min(n - 1, Math.ceil((g.scrollTop + g.clientHeight) / ROW_H) + OVERSCAN);
      const key = a + ":" + b + ":" + this.sel;
      if (!force && this.drawn === key) return;
      this.drawn = key;
      const top = Math.max(0, a * ROW_H);
      const s = svg("svg", { width, height: (b - a + 1) * ROW_H + PAD * 2, id: "graph-svg" });
      s.style.top = top + "px";
      const root = svg("g", { transform: `translate(0,${-top})` }, s);
      const tx = PAD + this.d.lanes * LANE_W + 8;
      if (this.sel >= a && this.sel <= b)
        svg("rect", { class: "rowbg sel", x: 0, y: PAD + this.sel * ROW_H, width, height: ROW_H }, root);
      for (const sm of this.d.summaries || []) {
        const [row, c0, c1] = sm;
        if (c0 < 0 || c1 < a || c0 > b) continue;
        svg("rect", { class: "cover", x: this.x(this.lane(c0)) - 7, y: this.y(c0) - 9, width: 14, height: this.y(c1) - this.y(c0) + 18, rx: 6, "data-summary": row }, root);
      }
      for (const [start, end, parent, edge, lane] of this.d.segs) {
        const cls = "edge" + (edge === EDGE_SPAWN ? " spawn" : parent >= 0 ? " fork" : "");
        if (start <= b && end >= a && end > start)
          svg("line", { class: "edge", x1: this.x(lane), x2: this.x(lane), y1: this.y(Math.max(start, a - 1)), y2: this.y(Math.min(end, b + 1)) }, root);
        if (parent >= 0 && parent <= b && start >= a) {
          const x1 = this.x(this.lane(parent)), y1 = this.y(parent), x2 = this.x(lane), y2 = this.y(start);
          svg("path", { class: cls, d: `M${x1} ${y1} Q${x2} ${y1} ${x2} ${Math.min(y2, y1 + ROW_H)} L${x2} ${y2}`, "data-edge": start }, root);
        }
      }
      for (let r = a; r <= b; r++) {
        const fl = this.R.flags[r], role = this.R.role[r], st = this.R.status[r];
        const cx = this.x(this.lane(r)), cy = this.y(r);
        const cls = `node role-${role} status-${st}${fl & F.SUMMARY ? " summary" : ""}${r === this.sel ? " sel" : ""}`;
        let shape;
        if (fl & F.SUMMARY) shape = svg("path", { class: cls, d: `M${cx} ${cy - 7} L${cx + 7} ${cy} L${cx} ${cy + 7} L${cx - 7} ${cy} Z` }, root);
        else if (role === "u") shape = svg("rect", { class: cls, x: cx - 6, y: cy - 6, width: 12, height: 12, rx: 2 }, root);
        else shape = svg("circle", { class: cls, cx, cy, r: role === "l" ? 6 : 4.5 }, root);
        shape.dataset.row = r;
        if (st === "x") svg("path", { class: "xmark", d: `M${cx - 4} ${cy - 4} L${cx + 4} ${cy + 4} M${cx + 4} ${cy - 4} L${cx - 4} ${cy + 4}` }, root);
        if (fl & F.CALL_ERROR) svg("circle", { class: "callerr", cx: cx + 6, cy: cy - 6, r: 2.5 }, root);
        const t = svg("text", { class: "gtext" + (fl & F.COMPACTED ? " compacted" : ""), x: tx, y: cy + 4 }, root);
        t.dataset.row = r;
        const br = this.branchAt.get(r), tags = [];
        if (fl & F.HEAD) tags.push("HEAD");
        if (br && br.name) tags.push(br.name);
        if (tags.length) svg("tspan", { class: "branch-label" }, t).textContent = "[" + tags.join(" · ") + "] ";
        svg("tspan", { class: "seq" }, t).textContent = "#" + this.R.seq[r] + " ";
        let label = this.R.snip[r] || this.R.name[r];
        if (fl & F.SUMMARY) label = "summary: " + label;
        else if (fl & F.SPAWN) label = "sub-agent " + this.R.name[r] + ": " + label;
        t.appendChild(document.createTextNode(label));
      }
      const old = $("graph-svg");
      if (old) old.replaceWith(s); else inner.appendChild(s);
    }

    // --- selection: a row's branch is the path to the tip of its segment -----------------
    pathTo(tip) {
      const out = [];
      for (let r = tip; r >= 0;) {
        out.push(r);
        const seg = this.d.segs[this.R.seg[r]];
        if (seg[3] === EDGE_SPAWN && seg[0] === r) break;
        r = this.R.parent[r];
      }
      return out.reverse();
    }
    async select(r, opts = {}) {
      if (r < 0 || r >= this.n) return;
      this.sel = r;
      const tip = this.d.segs[this.R.seg[r]][1];
      this.tip = tip;
      this.path = this.pathTo(tip);
      this.follow = tip === this.d.segs[this.R.seg[this.headRow]]?.[1];
      this.branchHead();
      this.drawGraph(true);
      if (opts.scrollGraph) this.scrollGraphTo(r);
      await this.renderChat(this.path.indexOf(r), opts.bottom);
    }
    branchHead() {
      const tip = this.tip, br = this.branchAt.get(tip);
      if (br) $("branches").value = String(tip);
      const bname = !br ? "branch" : br.spawn ? "sub-agent " + (br.name || "branch") : br.name || (br.main ? "main" : "branch");
      const bh = $("branch-head"); bh.textContent = "";
      bh.appendChild(el("b", null, bname));
      bh.appendChild(document.createTextNode(` · ${this.path.length} rows · tip #${this.R.seq[tip]}` +
        (br && br.usage ? " · branch " + fmtUsage(br.usage) : "") + (br && br.current ? " · HEAD" : "")));
      const seg = this.d.usage.segments[String(this.R.seg[tip])];
      if (seg && this.path.length) bh.appendChild(document.createTextNode(" · own segment " + fmtUsage(seg)));
    }
    async retext(r) {   // a streamed message's text changed: its markdown again, nothing else
      const div = $("row-" + r);
      if (!div) return;
      const b = await this.body(r), text = fieldText(b.text), old = div.querySelector(":scope > .md");
      const fresh = text ? md(text) : null;
      if (old && fresh) old.replaceWith(fresh);
      else if (old) old.remove();
      else if (fresh) div.querySelector(":scope > .turn-head").after(fresh);
    }
    scrollGraphTo(r) {
      const g = $("graph"), y = PAD + r * ROW_H;
      if (y < g.scrollTop || y > g.scrollTop + g.clientHeight - ROW_H) g.scrollTop = y - g.clientHeight / 2;
    }

    // --- the chat of the selected branch, a window [lo, hi) of the path ------------------
    async renderChat(focus, bottom) {
      const chat = $("chat"); chat.textContent = "";
      const p = this.path;
      if (focus < 0) focus = p.length - 1;
      this.hi = Math.min(p.length, Math.max(focus + 1 + 5, Math.min(p.length, focus + PAGE)));
      if (p.length - this.hi < PAGE) this.hi = p.length;
      this.lo = Math.max(0, Math.min(focus - 5, this.hi - PAGE));
      this.top = chat.appendChild(el("div", "more", "older turns…")); this.top.id = "chat-older";
      this.bottom = chat.appendChild(el("div", "more", "newer turns…")); this.bottom.id = "chat-newer";
      const frag = document.createDocumentFragment();
      for (let i = this.lo; i < this.hi; i++) frag.appendChild(await this.turnBlock(p[i]));
      chat.insertBefore(frag, this.bottom);
      this.top.hidden = this.lo === 0; this.bottom.hidden = this.hi === p.length;
      this.observe();
      const target = $("row-" + p[focus]);
      if (bottom) chat.scrollTop = chat.scrollHeight;
      else if (target) target.scrollIntoView({ block: "center" });
      if (target) target.classList.add("sel");
      chat.dataset.rows = String(this.hi - this.lo);
    }
    observe() {
      if (this.io) this.io.disconnect();
      this.io = new IntersectionObserver((es) => { for (const e of es) if (e.isIntersecting) this.more(e.target === this.top); }, { root: $("chat") });
      if (!this.top.hidden) this.io.observe(this.top);
      if (!this.bottom.hidden) this.io.observe(this.bottom);
    }
    async more(older) {
      if (this.loading) return;
      this.loading = true;
      const chat = $("chat"), p = this.path;
      try {
        if (older && this.lo > 0) {
          const lo = Math.max(0, this.lo - PAGE), frag = document.createDocumentFragment();
          for (let i = lo; i < this.lo; i++) frag.appendChild(await this.turnBlock(p[i]));
          const h = chat.scrollHeight;
          chat.insertBefore(frag, this.top.nextSibling);
          chat.scrollTop += chat.scrollHeight - h;
          this.lo = lo;
        } else if (!older && this.hi < p.length) {
          const hi = Math.min(p.length, this.hi + PAGE), frag = document.createDocumentFragment();
          for (let i = this.hi; i < hi; i++) frag.appendChild(await this.turnBlock(p[i]));
          chat.insertBefore(frag, this.bottom);
          this.hi = hi;
        }
        this.top.hidden = this.lo === 0; this.bottom.hidden = this.hi === p.length;
        chat.dataset.rows = String(this.hi - this.lo);
        this.observe();
      } finally { this.loading = false; }
    }
    async turnBlock(r) {
      const s = this.summaryAt.get(r);
      if (!s || !this.path.includes(s[2])) return this.turnEl(r);
      const frag = document.createDocumentFragment();
      const b = await this.body(s[0]);
      const box = el("details", "summary-box"); box.dataset.summary = s[0];
      box.appendChild(el("summary", null, `Compaction summary (#${this.R.seq[s[0]]}) — stands for #${this.R.seq[s[1]]}…#${this.R.seq[s[2]]} (${s[3]} nodes) in later model calls`));
      box.appendChild(md(fieldText(b.text)));
      frag.appendChild(box);
      frag.appendChild(await this.turnEl(r));
      return frag;
    }
    who(r, b) {
      const role = this.R.role[r], name = this.R.name[r];
      if (this.R.flags[r] & F.SUMMARY) return "Compaction summary";
      if (role === "u") return this.R.flags[r] & F.SPAWN ? `Task for sub-agent ${name}` : name === "user" ? "User" : b.source === "task_followup" ? "Sub-agent result" : name;
      if (role === "l") return "Assistant";
      return name;
    }
    async turnEl(r) {
      const b = await this.body(r), role = this.R.role[r], st = this.R.status[r], fl = this.R.flags[r];
      const div = el("div", `turn role-${role} status-${st}${fl & F.COMPACTED ? " compacted" : ""}`);
      div.id = "row-" + r; div.dataset.row = r;
      const head = div.appendChild(el("div", "turn-head"));
      head.appendChild(el("span", "who", this.who(r, b)));
      head.appendChild(el("span", null, "#" + b.seq));
      if (b.at) head.appendChild(el("span", null, new Date(b.at * 1000).toISOString().replace("T", " ").slice(0, 19)));
      if (b.model) head.appendChild(el("span", "badge", b.model));
      const done = st !== "r";    // a call under way has spent nothing it could say yet
      if (b.usage && done) head.appendChild(el("span", null, `${fmtTok(b.usage[0])} in · ${fmtTok(b.usage[1])} out` + (b.usage[2] ? ` · ${fmtTok(b.usage[2])} cached` : "")));
      if (b.latency_ms != null && done) head.appendChild(el("span", "latency", fmtMs(b.latency_ms)));
      if (role === "l" && done) head.appendChild(el("span", "cost", fmtUsd(b.cost_usd)));
      if (st !== "c") head.appendChild(el("span", "badge err", STATUS[st]));
      if (fl & F.COMPACTED) head.appendChild(el("span", "badge", "compacted"));
      const copy = head.appendChild(el("button", "copy-md", "copy as markdown"));
      copy.type = "button";
      copy.addEventListener("click", () => this.copy(r, b, copy));
      const text = fieldText(b.text);
      if (text) div.appendChild(md(text));
      cutNote(div, b.text);
      if (b.input != null) div.appendChild(pre(fieldText(b.input)));
      if (b.error) div.appendChild(el("div", "error", b.error));
      if (b.files && b.files.length) div.appendChild(this.filesEl(b.files, `Files changed in this turn (${b.files.length}, from ${b.files_from})`));
      for (const c of b.calls || []) {
        if (c.ask) div.appendChild(askEl(c));
        div.appendChild(this.callEl(c));
      }
      return div;
    }
    filesEl(files, title, open) {
      const d = el("details", "files");
      d.open = !!open;
      d.appendChild(el("summary", null, title));
      for (const f of files) {
        d.appendChild(el("div", "file", `${f.change} ${f.path}`));
        if (f.diff) { const p = el("pre", "diff"); diffLines(f.diff, p); d.appendChild(p); }
        if (f.note) d.appendChild(el("div", "cut", f.note));
      }
      return d;
    }
    callEl(c) {
      const d = el("details", `call status-${c.status[0] === "c" && c.status !== "cancelled" ? "c" : c.status === "error" ? "e" : c.status === "cancelled" ? "x" : "r"}`);
      d.dataset.call = c.id;
      const sum = d.appendChild(el("summary"));
      sum.appendChild(el("span", "name", "⚙ " + c.name));
      sum.appendChild(document.createTextNode(" "));
      if (c.status !== "completed") sum.appendChild(el("span", "badge err", c.status));
      if (c.perm) sum.appendChild(el("span", "perm " + (c.perm.granted ? "granted" : "denied"), `${c.perm.kind}: ${c.perm.granted ? "allowed" : "refused"}`));
      if (c.latency_ms != null) sum.appendChild(el("span", "latency", fmtMs(c.latency_ms)));
      const preview = fieldText(c.input).replace(/\s+/g, " ").slice(0, 90);
      sum.appendChild(el("span", "dim", " " + preview));
      d.appendChild(el("div", "label", "input"));
      d.appendChild(pre(fieldText(c.input)));
      cutNote(d, c.input);
      d.appendChild(el("div", "label", "output"));
      d.appendChild(pre(fieldText(c.output)));
      cutNote(d, c.output);
      if (c.error) d.appendChild(el("div", "error", c.error));
      if (c.files && c.files.length) d.appendChild(this.filesEl(c.files, `Files written (${c.files.length})`, true));
      if (c.spawn != null) d.appendChild(this.subagentEl(c.spawn));
      for (const k of c.kids || []) d.appendChild(k.role ? el("div", "dim", `↳ ${k.role} ${k.name} (${k.status}): ${fieldText(k.output).slice(0, 200)}`) : this.callEl(k));
      if (c.more) d.appendChild(el("div", "dim", `… ${c.more} more nested calls`));
      return d;
    }
    subagentEl(root) {
      const d = el("details", "subagent"); d.dataset.spawn = root;
      const tip = this.d.segs[this.R.seg[root]][1];
      const rows = this.pathTo(tip);
      d.appendChild(el("summary", null, `Sub-agent ${this.R.name[root]} — its branch (${rows.length} rows, #${this.R.seq[root]}…#${this.R.seq[tip]})`));
      const open = el("button", null, "open this branch"); open.type = "button";
      open.addEventListener("click", () => this.select(tip, { scrollGraph: true }));
      d.appendChild(open);
      let filled = false;
      d.addEventListener("toggle", async () => {
        if (!d.open || filled) return;
        filled = true;
        for (const r of rows.slice(0, 200)) d.appendChild(await this.turnEl(r));
        if (rows.length > 200) d.appendChild(el("div", "more", `${rows.length - 200} more rows: open the branch`));
      });
      return d;
    }
    copy(r, b, btn) {
      const lines = [`## ${this.who(r, b)} (#${b.seq}${b.model ? ", " + b.model : ""})`, ""];
      const text = fieldText(b.text);
      if (text) lines.push(text, "");
      if (b.error) lines.push("> error: " + b.error, "");
      for (const c of b.calls || []) lines.push(`- tool \`${c.name}\`(${fieldText(c.input).replace(/\s+/g, " ").slice(0, 200)}) → ${c.status}` + (c.latency_ms != null ? ` (${fmtMs(c.latency_ms)})` : ""));
      const out = lines.join("\n").trimEnd() + "\n";
      window.sdLastCopy = out;
      const done = () => { btn.textContent = "copied"; setTimeout(() => (btn.textContent = "copy as markdown"), 1500); };
      const fallback = () => {
        const ta = document.body.appendChild(el("textarea")); ta.value = out; ta.select();
        try { document.execCommand("copy"); } catch (e) { /* shown in sdLastCopy */ }
        ta.remove(); done();
      };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(out).then(done, fallback);
      else fallback();
    }

    // --- search over every body ---------------------------------------------------------
    async search(q) {
      const box = $("results");
      q = q.trim().toLowerCase();
      if (!q) { box.hidden = true; return; }
      const hits = [];
      const count = this.d.chunk_count ?? Math.ceil(this.n / this.d.chunk_size);
      let total = 0;
      for (let i = 0; i < count; i++) {
        const ch = await this.chunk(i);
        ch.forEach((b, k) => {
          const r = i * this.d.chunk_size + k;
          const found = matchBody(b, q);
          if (found) { total++; if (hits.length < MAX_HITS) hits.push([r, found]); }
        });
      }
      box.textContent = "";
      box.appendChild(el("div", "dim", `${total} node${total === 1 ? "" : "s"} match “${q}”` + (total > MAX_HITS ? ` (first ${MAX_HITS})` : "")));
      for (const [r, s] of hits) {
        const d = box.appendChild(el("div", "result")); d.dataset.row = r;
        d.appendChild(el("span", "dim", `#${this.R.seq[r]} ${this.who(r, {})} `));
        const i = s.toLowerCase().indexOf(q), from = Math.max(0, i - 40);
        d.appendChild(document.createTextNode((from ? "…" : "") + s.slice(from, i)));
        d.appendChild(el("mark", null, s.slice(i, i + q.length)));
        d.appendChild(document.createTextNode(s.slice(i + q.length, i + q.length + 80)));
        d.addEventListener("click", () => { box.hidden = true; this.select(r, { scrollGraph: true }); });
      }
      box.hidden = false;
    }

    async reload() {
      const keep = this.follow ? -1 : this.R.id[this.sel];
      await this.load();
      this.header();
      let r = this.headRow >= 0 ? this.headRow : this.n - 1;
      if (keep !== -1) { const i = this.R.id.indexOf(keep); if (i >= 0) r = i; }
      await this.select(r, { bottom: keep === -1 });
      $("live-state").textContent = "● live · updated " + new Date().toLocaleTimeString();
    }
  }

  function askEl(c) {   // the agent's question and the user's answer: part of the conversation, always shown
    const a = el("div", "ask");
    a.appendChild(el("div", "q", "❓ " + c.ask.q));
    if (c.ask.options.length) a.appendChild(el("div", "dim", "options: " + c.ask.options.join(" · ")));
    a.appendChild(el("div", "a", "answer: " + (c.status === "completed" ? fieldText(c.ask.a) : "(none: " + c.status + ")")));
    return a;
  }
  function pre(text) { const p = el("pre"); p.textContent = text; return p; }
  function cutNote(into, v) {
    if (!v || typeof v !== "object") return;
    if (v.spilled) into.appendChild(el("div", "cut", `spilled body of ${v.spilled} bytes` + (v.cut ? ` — ${v.cut} bytes beyond the report's limit are not included` : v.missing ? " — its blob is missing" : "")));
    else if (v.cut) into.appendChild(el("div", "cut", `… ${v.cut} more bytes not included (the report's size limit)`));
  }
  function matchBody(b, q) {
    const fields = [fieldText(b.text), fieldText(b.input), b.error || ""];
    for (const c of b.calls || []) collectCall(c, fields);
    for (const f of b.files || []) fields.push(f.path, f.diff || "");
    for (const s of fields) if (s && s.toLowerCase().includes(q)) return s;
    return null;
  }
  function collectCall(c, out) {
    out.push(c.name, fieldText(c.input), fieldText(c.output), c.error || "");
    if (c.ask) out.push(c.ask.q, fieldText(c.ask.a));
    for (const f of c.files || []) out.push(f.path, f.diff || "");
    for (const k of c.kids || []) k.role ? out.push(fieldText(k.output)) : collectCall(k, out);
  }

  function theme() {
    let t = null;
    try { t = localStorage.getItem("sd-theme"); } catch (e) { /* file: storage may be off */ }
    if (!t) t = window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
    document.documentElement.dataset.theme = t;
    $("theme").addEventListener("click", () => {
      const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      try { localStorage.setItem("sd-theme", next); } catch (e) { /* ignore */ }
    });
  }

  async function main() {
    theme();
    const live = $("sd-live");
    const src = live ? new SDLive.LiveSource(JSON.parse(live.textContent)) : new EmbeddedSource();
    const v = new Viewer(src);
    window.sdViewer = v;
    await v.load();
    v.header();
    let raf = 0;
    $("graph").addEventListener("scroll", () => { if (!raf) raf = requestAnimationFrame(() => { raf = 0; v.drawGraph(); }); });
    window.addEventListener("resize", () => v.drawGraph(true));
    $("graph").addEventListener("click", (e) => {
      const t = e.target.closest("[data-row]");
      if (t) v.select(+t.dataset.row);
    });
    $("branches").addEventListener("change", (e) => v.select(+e.target.value, { scrollGraph: true, bottom: true }));
    let timer = 0;
    $("search").addEventListener("input", (e) => { clearTimeout(timer); timer = setTimeout(() => v.search(e.target.value), 250); });
    $("search").addEventListener("keydown", (e) => {
      if (e.key === "Enter") { clearTimeout(timer); v.search(e.target.value); }
      if (e.key === "Escape") $("results").hidden = true;
    });
    const start = v.headRow >= 0 ? v.headRow : v.n - 1;
    if (start >= 0) { $("graph").scrollTop = Math.max(0, PAD + start * ROW_H - $("graph").clientHeight / 2); await v.select(start, { bottom: true }); }
    else { v.drawGraph(true); $("chat").textContent = "This session has no turns yet."; }
    requestAnimationFrame(() => { window.sdPaintMs = performance.now(); document.body.dataset.ready = "1"; });
    if (live) {
      let queue = Promise.resolve();     // patches apply one at a time, in order
      const state = (s) => ($("live-state").textContent = s);
      const run = (f) => { queue = queue.then(f).catch((e) => { console.error("live patch", e); return v.reload(); }); };
      src.onChange((p, at) => run(async () => { await SDLive.apply(v, p, at); state("● live · updated " + new Date().toLocaleTimeString()); }),
        (why) => { (window.sdResets ||= []).push(why || "?"); run(() => v.reload()); }, state);
    }
  }
  main().catch((e) => { document.body.dataset.ready = "error"; document.body.appendChild(el("pre", "error", "viewer error: " + (e && e.stack || e))); });
})();
