/* sessiondag report: a small Markdown renderer and code highlighter (no dependency, no HTML strings).
   Every piece of text becomes a DOM text node: whatever a message holds (<script>, on* attributes)
   is shown, never parsed as HTML. Links keep only http(s) and mailto targets. */
"use strict";
const SDMarkdown = (() => {
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };
  const KW = new Set(("and as assert async await break case catch class const continue def del do elif else enum " +
    "except export extends false final finally fn for from func function go if impl import in interface is lambda " +
    "let loop match mod module mut new nil none None not null or package pass pub raise return self static struct " +
    "super switch this throw trait true True False try type typeof use var void where while with yield echo fi then " +
    "done esac local readonly").split(" "));
  const HASH_COMMENT = new Set(["py", "python", "sh", "bash", "shell", "zsh", "rb", "ruby", "yaml", "yml", "toml", "r", "perl", "make", "dockerfile", "conf", "ini"]);
  function highlight(code, lang, into) {
    lang = (lang || "").toLowerCase();
    if (lang === "diff" || lang === "patch") return diffLines(code, into);
    const hash = HASH_COMMENT.has(lang) || (!lang && /^\s*#/m.test(code) && !/\/\//.test(code));
    const rx = hash
      ? /(#[^\n]*)|("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_][\w]*)/g
      : /(\/\/[^\n]*|\/\*[\s\S]*?\*\/)|("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b)|([A-Za-z_$][\w$]*)/g;
    let last = 0, m;
    const text = (s) => { if (s) into.appendChild(document.createTextNode(s)); };
    while ((m = rx.exec(code))) {
      if (m[4] !== undefined && !KW.has(m[4])) continue;
      text(code.slice(last, m.index));
      const cls = m[1] !== undefined ? "tk-com" : m[2] !== undefined ? "tk-str" : m[3] !== undefined ? "tk-num" : "tk-kw";
      into.appendChild(el("span", cls, m[0]));
      last = rx.lastIndex;
    }
    text(code.slice(last));
    return into;
  }
  function diffLines(text, into) {
    for (const line of text.split("\n")) {
      const cls = line.startsWith("+++") || line.startsWith("---") ? "hunk" : line.startsWith("@@") ? "hunk"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      into.appendChild(el("span", cls, line + "\n"));
    }
    return into;
  }
  const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n][\s\S]*?)\*\*|__([^_\n][\s\S]*?)__|~~([^~\n]+)~~|\*([^*\s][^*\n]*?)\*|(?<![\w])_([^_\s][^_\n]*?)_(?![\w])|!?\[([^\]\n]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
  function inline(s, into, depth) {
    if (depth > 6) { into.appendChild(document.createTextNode(s)); return into; }
    let last = 0, m;
    INLINE.lastIndex = 0;
    const found = [];
    while ((m = INLINE.exec(s))) found.push([m.index, INLINE.lastIndex, m.slice()]);
    for (const [start, end, g] of found) {
      if (start < last) continue;
      into.appendChild(document.createTextNode(s.slice(last, start)));
      if (g[1]) into.appendChild(el("code", null, g[2]));
      else if (g[3] !== undefined || g[4] !== undefined) inline(g[3] ?? g[4], into.appendChild(el("strong")), depth + 1);
      else if (g[5] !== undefined) inline(g[5], into.appendChild(el("del")), depth + 1);
      else if (g[6] !== undefined || g[7] !== undefined) inline(g[6] ?? g[7], into.appendChild(el("em")), depth + 1);
      else if (g[8] !== undefined) {
        const url = g[9];
        if (/^(https?:|mailto:)/i.test(url) && !g[0].startsWith("!")) {
          const a = el("a"); a.href = url; a.rel = "noopener noreferrer"; a.target = "_blank";
          inline(g[8], a, depth + 1); into.appendChild(a);
        } else into.appendChild(document.createTextNode(g[0]));
      }
      last = end;
    }
    into.appendChild(document.createTextNode(s.slice(last)));
    return into;
  }
  const LIST = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
  function render(src, into) {
    into = into || el("div", "md");
    const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) { i++; continue; }
      if ((m = /^\s*(```+|~~~+)\s*([\w+#.-]*)/.exec(line))) {
        const fence = m[1], body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
        i++;
        const pre = el("pre", "code"), code = el("code");
        if (m[2]) code.dataset.lang = m[2];
        highlight(body.join("\n"), m[2], code);
        pre.appendChild(code); into.appendChild(pre);
        continue;
      }
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) { inline(m[2], into.appendChild(el("h" + m[1].length)), 0); i++; continue; }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { into.appendChild(el("hr")); i++; continue; }
      if (/^\s*>/.test(line)) {
        const body = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
        render(body.join("\n"), into.appendChild(el("blockquote")));
        continue;
      }
      if (/\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(lines[i + 1])) {
        const cells = (l) => l.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
        const table = el("table"), head = table.appendChild(el("tr"));
        for (const c of cells(line)) inline(c, head.appendChild(el("th")), 0);
        i += 2;
        while (i < lines.length && /\|/.test(lines[i]) && lines[i].trim()) {
          const tr = table.appendChild(el("tr"));
          for (const c of cells(lines[i++])) inline(c, tr.appendChild(el("td")), 0);
        }
        into.appendChild(table);
        continue;
      }
      if ((m = LIST.exec(line))) {
        const list = el(/\d/.test(m[2]) ? "ol" : "ul");
        while (i < lines.length && (m = LIST.exec(lines[i]))) {
          const item = [m[3]];
          i++;
          while (i < lines.length && lines[i].trim() && !LIST.exec(lines[i]) && /^\s{2,}/.test(lines[i])) item.push(lines[i++].trim());
          inline(item.join(" "), list.appendChild(el("li")), 0);
        }
        into.appendChild(list);
        continue;
      }
      const para = [];
      while (i < lines.length && lines[i].trim() && !/^\s*(```|~~~|#{1,6}\s|>)/.test(lines[i]) && !LIST.exec(lines[i])) para.push(lines[i++]);
      if (!para.length) para.push(lines[i++]);
      const p = into.appendChild(el("p"));
      para.forEach((l, k) => { if (k) p.appendChild(el("br")); inline(l, p, 0); });
    }
    return into;
  }
  return { render, highlight, diffLines, el };
})();
