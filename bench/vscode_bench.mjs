// The VS Code extension in code-server, measured (run by `make bench-vscode`; prints a table):
//   - activation → a connected, populated Sessions view: daemon already running vs auto-started
//   - first streamed token: prompt sent → token received by the extension → token on screen in the chat
//     webview, next to a bare sessiondag-client's prompt sent → first token received (same daemon, script)
//   - a 2,000-node session: branch nodes fetched + tree rows built, graph fetched + laid out + drawn
// The extension writes "timing {json}" lines to its output channel; this script reads them from the log.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.join(here, '..', 'editors', 'vscode');
const require = createRequire(path.join(ext, 'package.json'));
const { chromium } = require('playwright-core');
const sd = require('sessiondag-client');
const cs = await import(path.join(ext, 'test', 'codeServer.mjs'));

const SESSIONDAG = process.env.SESSIONDAG_BIN || path.join(here, '..', '.venv', 'bin', 'sessiondag');
const RUNS = Number(process.env.BENCH_RUNS || 5);
const PROMPTS = Number(process.env.BENCH_PROMPTS || 10);
const BIG = 2000;

cs.checkSetup();
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-vsc-bench-'));
const dirs = cs.editorDirs(root);
const work = path.join(root, 'work');
const stateDir = path.join(root, 'state');
fs.mkdirSync(work);
const script = path.join(root, 'script.json');
fs.writeFileSync(script, JSON.stringify([{ text: 'A streamed reply of a few dozen characters, in chunks.', repeat: true }]));
const env = { ...process.env, XDG_CONFIG_HOME: dirs['xdg-config'], XDG_DATA_HOME: dirs['xdg-data'],
  XDG_CACHE_HOME: dirs['xdg-cache'], XDG_RUNTIME_DIR: dirs.run, SESSIONDAG_SCRIPT: script };
delete env.SESSIONDAG_HOME;
cs.writeSettings(dirs, { 'sessiondag.command': SESSIONDAG, 'sessiondag.stateDir': stateDir, 'sessiondag.idleTimeout': 120 });
cs.installExtension(dirs, env);

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN; };
const timings = (what) => {
  const out = [];
  for (const f of findLogs(path.join(dirs.ud, 'logs'))) {
    for (const line of fs.readFileSync(f, 'utf8').split('\n')) {
      const m = /timing (\{.*\})/.exec(line);
      if (m) { const j = JSON.parse(m[1]); if (j.what === what) out.push(j); }
    }
  }
  return out;
};
function findLogs(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? findLogs(p) : e.name.endsWith('-sessiondag.log') ? [p] : [];
  });
}
async function waitTimings(what, n, timeout = 60000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const t = timings(what);
    if (t.length >= n) return t;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} '${what}' timings (have ${t.length})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
async function stopDaemon() {
  try {
    const c = await sd.connect({ stateDir, env });
    await c.daemonStop();
    await new Promise((r) => c.onClose(r));
  } catch { /* none */ }
}

// a session with BIG nodes (user/llm pairs on one chain), created through a bare client
const setup = await sd.connect({ stateDir, env, autoStart: true, command: [SESSIONDAG], idleTimeout: 120 });
const h = await setup.sessionStart({ working_dir: work });
let head = 'ROOT';
for (let i = 0; i < BIG / 2; i++) {
  const u = await setup.sessionAppend({ session_id: h.session_id, node: { role: 'user', name: 'me', output: `question ${i}`, predecessor: head } });
  const l = await setup.sessionAppend({ session_id: h.session_id, node: { role: 'llm', name: 'm', output: `answer ${i} `.repeat(4), caller: u.node.id, predecessor: u.node.id } });
  head = l.node.id;
}
await setup.sessionCommit({ session_id: h.session_id });
// the bare client's first-token latency on the same daemon
const bare = [];
for (let i = 0; i < PROMPTS; i++) {
  const s = await setup.sessionStart({ working_dir: work, session_id: `bare-${i}` });
  let first;
  const sent = performance.now();
  const d = setup.onAgentDidUpdate((p) => { if (p.kind === 'text_delta' && first === undefined) first = performance.now(); });
  await setup.agentPrompt({ session_id: s.session_id, content: `bare ${i}` });
  d.dispose();
  bare.push(first - sent);
  await setup.sessionReset({ session_id: s.session_id });
}
await setup.close();

const server = await cs.startCodeServer(dirs, work, env);
const browser = await chromium.launch({ executablePath: cs.CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const ACTIVITY = '.activitybar .action-item a[aria-label^="sessiondag"], .activitybar .action-item[aria-label^="sessiondag"]';
const rows = [];
try {
  // activation → populated tree; first with the daemon running, then auto-started (stopped before each load)
  for (const mode of ['running', 'autostart']) {
    const before = timings('tree-populated').length;
    for (let i = 0; i < RUNS; i++) {
      if (mode === 'autostart') await stopDaemon();
      await page.goto(`${server.url}/?folder=${encodeURIComponent(work)}`);
      await page.locator(ACTIVITY).first().waitFor({ timeout: 60000 });
      await page.locator(ACTIVITY).first().click();
      await page.locator('.pane-body .monaco-list-row', { hasText: h.session_id }).first().waitFor({ timeout: 60000 });
      await waitTimings('tree-populated', before + i + 1);
    }
    const ms = timings('tree-populated').slice(before).map((t) => t.ms);
    rows.push([`activation → populated tree (daemon ${mode})`, median(ms), Math.max(...ms), mode === 'running' ? 1000 : 2000, RUNS]);
  }
  // the 2,000-node branch: opening the session makes it current, which expands it and its current branch
  const srow = page.locator('.pane-body .monaco-list-row', { hasText: h.session_id }).first();
  await srow.click();
  await page.locator('.statusbar-item', { hasText: h.session_id.slice(0, 8) }).first().waitFor({ timeout: 30000 });
  if (await srow.getAttribute('aria-expanded') === 'false') await srow.locator('.monaco-tl-twistie').click();
  const branch = (await waitTimings('branch-nodes', 1)).filter((t) => t.nodes >= BIG - 1).map((t) => t.ms);
  rows.push([`tree: ${BIG}-node branch fetched + rows built`, median(branch), Math.max(...branch), 500, branch.length]);
  for (let i = 0; i < RUNS; i++) {
    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').fill('>sessiondag: Show Session Graph');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Show Session Graph' }).first().waitFor({ timeout: 30000 });
    await page.keyboard.press('Enter');
    await waitTimings('graph', i + 1);
    await page.keyboard.press('Escape');
  }
  const graph = timings('graph');
  const [firstOpen, ...reopen] = graph;
  rows.push([`graph: ${BIG} nodes, first open (creates the webview)`, firstOpen.total, firstOpen.total, 500, 1]);
  rows.push([`graph: ${BIG} nodes, open again (fetch+layout+draw)`, median(reopen.map((t) => t.total)), Math.max(...reopen.map((t) => t.total)), 500, reopen.length]);
  rows.push(['  of which: fetch (get_branch per branch)', median(graph.map((t) => t.fetch)), Math.max(...graph.map((t) => t.fetch)), '', graph.length]);
  rows.push(['  of which: layout', median(graph.map((t) => t.layout)), Math.max(...graph.map((t) => t.layout)), '', graph.length]);
  // first streamed token in the chat
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget input').fill('>sessiondag: New Session');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'New Session' }).first().waitFor({ timeout: 30000 });
  await page.keyboard.press('Enter');
  let chat;
  for (let deadline = Date.now() + 30000; !chat && Date.now() < deadline;) {
    for (const f of page.frames()) if (await f.$('#input').catch(() => null)) chat = f;
    if (!chat) await page.waitForTimeout(100);
  }
  for (let i = 0; i < PROMPTS; i++) {
    await chat.fill('#input', `prompt ${i}`);
    await chat.click('#send');
    await waitTimings('first-token', i + 1);
    await chat.locator('#send:not([disabled])').waitFor({ timeout: 30000 });
  }
  const ft = timings('first-token');
  rows.push(['first token: extension received → in the webview DOM', median(ft.map((t) => t.received_to_dom)), Math.max(...ft.map((t) => t.received_to_dom)), '', ft.length]);
  rows.push(['first token: extension received → on screen', median(ft.map((t) => t.received_to_shown)), Math.max(...ft.map((t) => t.received_to_shown)), 30, ft.length]);
  rows.push(['first token: prompt sent → received (extension)', median(ft.map((t) => t.send_to_received)), Math.max(...ft.map((t) => t.send_to_received)), '', ft.length]);
  rows.push(['first token: prompt sent → received (bare client)', median(bare), Math.max(...bare), '', bare.length]);
} catch (e) {
  const shot = path.join(root, 'bench-failed.png');
  await page.screenshot({ path: shot }).catch(() => undefined);
  console.error(`bench failed; screenshot: ${shot}`);
  throw e;
} finally {
  await browser.close();
  await server.stop();
  await stopDaemon();
}

const fmt = (v) => (typeof v === 'number' ? (v < 10 ? v.toFixed(1) : String(Math.round(v))) : String(v));
console.log(`\nVS Code extension (code-server 4.100.3, chromium), ${os.cpus().length} cores; ms\n`);
console.log(`${'measure'.padEnd(52)}${'median'.padStart(9)}${'max'.padStart(9)}${'target'.padStart(9)}${'n'.padStart(5)}`);
for (const [name, med, max, target, n] of rows) {
  console.log(`${name.padEnd(52)}${fmt(med).padStart(9)}${fmt(max).padStart(9)}${(target === '' ? '' : `<${target}`).padStart(9)}${String(n).padStart(5)}`);
}
