// The VS Code extension in code-server, measured (run by `make bench-vscode`; prints a table):
//   - activation → a connected, populated Sessions view: daemon already running vs auto-started
//   - first streamed token: prompt sent → token received by the extension → token on screen in the chat
//     webview, next to a bare sessiondag-client's prompt sent → first token received (same daemon, script)
//   - a 2,000-node session: the branch's newest page fetched + tree rows built (vs the whole branch in one
//     get_branch, bare client); the graph from the command to drawn-and-painted: in the graph view (built
//     with the sessiondag container, kept while hidden) with the container open and with the Explorer
//     showing; in an editor tab, new and open; the graph view's cold start (a reload, then a click on the
//     container), as the window's first webview and after the chat's; and beside them the floor: an
//     empty webview (bench/vscode_floor, a bench-only extension) from its command to its first painted frame
// The extension writes "timing {json}" lines to its output channel; this script reads them from the log.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
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
// the bench-only empty-webview extension, packed in a temp copy and installed next to sessiondag
const floorSrc = path.join(root, 'floor');
fs.cpSync(path.join(here, 'vscode_floor'), floorSrc, { recursive: true });
const floorVsix = path.join(root, 'floor.vsix');
execFileSync(path.join(ext, 'node_modules', '.bin', 'vsce'), ['package', '--no-dependencies', '--skip-license', '-o', floorVsix],
  { cwd: floorSrc, stdio: ['ignore', 'pipe', 'pipe'] });
execFileSync(cs.CODE_SERVER, ['--user-data-dir', dirs.ud, '--extensions-dir', dirs.ext, '--install-extension', floorVsix],
  { env, stdio: ['ignore', 'pipe', 'pipe'] });

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
    return e.isDirectory() ? findLogs(p) : /-sessiondag(-bench)?\.log$/.test(e.name) ? [p] : [];
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
/** Runs `act`, then waits for a timing line `what` that `match` accepts and was not there before. */
async function nextTiming(what, match, act, timeout = 60000) {
  const count = (xs) => xs.reduce((m, x) => m.set(JSON.stringify(x), (m.get(JSON.stringify(x)) ?? 0) + 1), new Map());
  const before = count(timings(what).filter(match));
  await act();
  for (const deadline = Date.now() + timeout; ;) {
    const now = count(timings(what).filter(match));
    const fresh = [...now].find(([k, n]) => n > (before.get(k) ?? 0));
    if (fresh) return JSON.parse(fresh[0]);
    if (Date.now() > deadline) throw new Error(`timed out waiting for a '${what}' timing`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
/** The webview frame whose document has `selector`. */
async function webviewFrame(selector, timeout = 30000) {
  for (const deadline = Date.now() + timeout; ;) {
    for (const f of page.frames()) if (await f.$(selector).catch(() => null)) return f;
    if (Date.now() > deadline) throw new Error(`no webview shows ${selector}`);
    await page.waitForTimeout(100);
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
// the tree's read of the branch: the whole branch in one get_branch (as before paging) vs the newest page
const wholeMs = [];
const pageMs = [];
for (let i = 0; i < RUNS * 2; i++) {
  let t = performance.now();
  await setup.sessionGetBranch({ session_id: h.session_id });
  wholeMs.push(performance.now() - t);
  t = performance.now();
  await setup.sessionGetBranch({ session_id: h.session_id, limit: 200, order: 'desc' });
  pageMs.push(performance.now() - t);
}
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
    const ms = [];
    for (let i = 0; i < RUNS; i++) {
      if (mode === 'autostart') await stopDaemon();
      await page.goto(`${server.url}/?folder=${encodeURIComponent(work)}`);
      await page.locator(ACTIVITY).first().waitFor({ timeout: 60000 });
      ms.push((await nextTiming('tree-populated', () => true, () => page.locator(ACTIVITY).first().click())).ms);
      await page.locator('.pane-body .monaco-list-row', { hasText: h.session_id }).first().waitFor({ timeout: 60000 });
    }
    rows.push([`activation → populated tree (daemon ${mode})`, median(ms), Math.max(...ms), mode === 'running' ? 1000 : 2000, RUNS]);
  }
  // the 2,000-node branch: opening the session makes it current, which expands it and its current branch
  const srow = page.locator('.pane-body .monaco-list-row', { hasText: h.session_id }).first();
  await srow.click();
  await page.locator('.statusbar-item', { hasText: h.session_id.slice(0, 8) }).first().waitFor({ timeout: 30000 });
  if (await srow.getAttribute('aria-expanded') === 'false') await srow.locator('.monaco-tl-twistie').click();
  const branch = (await waitTimings('branch-nodes', 1)).filter((t) => t.total >= BIG).map((t) => t.ms);
  rows.push([`tree: ${BIG}-node branch, newest 200 fetched + rows built`, median(branch), Math.max(...branch), 500, branch.length]);
  rows.push([`  get_branch ${BIG} nodes, whole branch (bare client)`, median(wholeMs), Math.max(...wholeMs), '', wholeMs.length]);
  rows.push([`  get_branch newest 200 of ${BIG} (bare client)`, median(pageMs), Math.max(...pageMs), '', pageMs.length]);
  // the palette is reopened when it opened before the extension's commands were in (after a reload)
  const command = async (title) => {
    for (let attempt = 0; ; attempt++) {
      await page.keyboard.press('F1');
      await page.locator('.quick-input-widget input').fill(`>${title}`);
      try {
        await page.locator('.quick-input-list .monaco-list-row', { hasText: title.split(': ')[1] }).first().waitFor({ timeout: 5000 });
        await page.keyboard.press('Enter');
        return;
      } catch (e) {
        await page.keyboard.press('Escape');
        if (attempt >= 5) throw e;
      }
    }
  };
  const col = (xs, k) => xs.map((t) => t[k]);
  const stat = (name, xs, k, target = '') => rows.push([name, median(col(xs, k)), Math.max(...col(xs, k)), target, xs.length]);
  const view = (trigger) => (t) => t.host === 'view' && t.trigger === trigger;
  const editor = (t) => t.host === 'editor' && t.trigger === 'show';
  // the graph view, from the command to drawn and painted. The container is open (the view was resolved
  // with it and shows the current session): the command fetches, lays out and posts the data
  const open = [];
  for (let i = 0; i <= RUNS; i++) open.push(await nextTiming('graph', view('show'), () => command('sessiondag: Show Session Graph')));
  // the Explorer shows instead (the view is hidden, kept alive): the command reveals the container too
  const hidden = [];
  for (let i = 0; i < RUNS; i++) {
    await command('View: Show Explorer');
    await page.locator('.sidebar .pane-header', { hasText: /folders|outline|timeline|work/i }).first().waitFor({ timeout: 30000 });
    hidden.push(await nextTiming('graph', view('show'), () => command('sessiondag: Show Session Graph')));
  }
  stat(`graph view: ${BIG} nodes, command → painted (container open)`, open.slice(1), 'total', 500);
  stat('  of which: fetched + laid out', open.slice(1), 'laid_out');
  stat('  layout received in the webview', open.slice(1), 'received');
  stat(`graph view: ${BIG} nodes, command → painted (Explorer showing)`, hidden, 'total', 500);
  // the editor-tab graph (Open Graph in Editor): a new webview each time (opened, closed), then the open tab
  const fresh = [];
  for (let i = 0; i < RUNS; i++) {
    fresh.push(await nextTiming('graph', editor, () => command('sessiondag: Open Graph in Editor')));
    await command('View: Close Editor');
    await page.waitForTimeout(300);
  }
  const again = [];
  for (let i = 0; i <= RUNS; i++) again.push(await nextTiming('graph', editor, () => command('sessiondag: Open Graph in Editor')));
  stat(`graph in an editor tab: ${BIG} nodes, new webview`, fresh, 'total');
  stat('  of which: webview script running', fresh, 'script');
  stat('  data fetched + laid out', fresh, 'laid_out');
  stat(`graph in an editor tab: ${BIG} nodes, tab open`, again.slice(1), 'total');
  // the floor: an empty webview (bench/vscode_floor), opened the same way while other webviews are open
  const emptyAfter = [];
  for (let i = 0; i < RUNS; i++) emptyAfter.push(await nextTiming('empty-webview', () => true, () => command('sessiondag bench: Empty Webview')));
  stat('empty webview, others open: command → painted', emptyAfter, 'total');
  // first streamed token in the chat
  await page.keyboard.press('F1');
  await page.locator('.quick-input-widget input').fill('>sessiondag: New Session');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'New Session' }).first().waitFor({ timeout: 30000 });
  await page.keyboard.press('Enter');
  const chat = await webviewFrame('#input');
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
  // cold: the window reloaded with the Explorer showing; a click on the sessiondag icon activates the
  // extension, which resolves the Sessions tree and the graph view (a new webview) with the current
  // session. Either as the window's first webview or after the chat's; beside each, the empty webview
  const reload = async () => {
    await command('View: Close All Editor Groups');
    await command('View: Show Explorer');
    await page.locator('.sidebar .pane-header', { hasText: /folders|outline|timeline|work/i }).first().waitFor({ timeout: 30000 });
    await nextTiming('startup-finished', () => true, () => page.goto(`${server.url}/?folder=${encodeURIComponent(work)}`));
    await page.locator(ACTIVITY).first().waitFor({ timeout: 60000 });
    if (await page.locator('.activitybar .action-item.checked', { has: page.locator('[aria-label^="sessiondag"]') }).count()
      || await page.locator('.activitybar .action-item.checked[aria-label^="sessiondag"]').count()) {
      throw new Error('the sessiondag container came back open after the reload: no cold open to measure');
    }
  };
  const clickContainer = async () => {
    let clicked;
    const t = await nextTiming('graph', view('resolve'), async () => { clicked = Date.now(); await page.locator(ACTIVITY).first().click(); });
    return { ...t, from_click: t.painted_at - clicked, to_resolve: t.painted_at - t.total - clicked };
  };
  const coldFirst = [];
  const coldAfter = [];
  const emptyFirst = [];
  for (let i = 0; i < RUNS; i++) {
    await reload();
    coldFirst.push(await clickContainer());
    await reload();
    await command('sessiondag: Open Chat');
    await webviewFrame('#input');
    coldAfter.push(await clickContainer());
    await reload();
    emptyFirst.push(await nextTiming('empty-webview', () => true, () => command('sessiondag bench: Empty Webview')));
  }
  stat(`graph view, cold: click on the container → painted`, coldFirst, 'from_click', 500);
  stat('  of which: click → view resolved (activation)', coldFirst, 'to_resolve');
  stat('  of which: view resolved → painted', coldFirst, 'total');
  stat('  floor: empty webview, first of the window', emptyFirst, 'total');
  stat('graph view, cold, chat open: click → painted', coldAfter, 'from_click');
  stat('  of which: click → view resolved', coldAfter, 'to_resolve');
  stat('  of which: view resolved → painted', coldAfter, 'total');
  stat('  floor: empty webview, others open (above)', emptyAfter, 'total');
} catch (e) {
  const shot = path.join(root, 'bench-failed.png');
  await page.screenshot({ path: shot }).catch(() => undefined);
  console.error(`bench failed; screenshot: ${shot}`);
  throw e;
} finally {
  await browser.close();
  await server.stop();
  await stopDaemon();
  printTable();
}

function printTable() {
  const fmt = (v) => (typeof v === 'number' ? (v < 10 ? v.toFixed(1) : String(Math.round(v))) : String(v));
  console.log(`\nVS Code extension (code-server 4.100.3, chromium), ${os.cpus().length} cores; ms\n`);
  console.log(`${'measure'.padEnd(52)}${'median'.padStart(9)}${'max'.padStart(9)}${'target'.padStart(9)}${'n'.padStart(5)}`);
  for (const [name, med, max, target, n] of rows) {
    console.log(`${name.padEnd(52)}${fmt(med).padStart(9)}${fmt(max).padStart(9)}${(target === '' ? '' : `<${target}`).padStart(9)}${String(n).padStart(5)}`);
  }
}
