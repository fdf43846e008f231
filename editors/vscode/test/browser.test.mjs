// The built .vsix in a real VS Code (code-server) driven through chromium, as a user would: open the chat,
// send a prompt (scripted provider), see the streamed reply, grant a permission and find the written file,
// fork from an earlier message and see the new branch in the tree and the graph view (click a node: it is
// selected in the tree), see a `sessiondag run` started outside VS Code appear live; page a long branch,
// compact, see the costs (tree, chat, usage breakdown), read the git log, lose and regain the working dir (unbound / rebound), reset the session. Screenshots go to a temp dir; their paths are printed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import {
  CHROMIUM, checkSetup, editorDirs, installExtension, repoRoot, startCodeServer, writeSettings,
} from './codeServer.mjs';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');
const sd = require('sessiondag-client');

const SESSIONDAG = process.env.SESSIONDAG_BIN || path.join(repoRoot, '.venv', 'bin', 'sessiondag');
const SCRIPT = [
  { match: 'hello agent', text: 'Hi! I am the scripted agent; this reply is streamed to VS Code in small chunks.' },
  // a file at the top (a file created inside a just-created dir can be missed by the daemon's watcher)
  { match: 'write the file', text: 'I will write it.', tool_calls: [{ name: 'write_file', arguments: { path: 'hello.txt', content: 'written by the agent\n' } }] },
  { match: 'wrote', text: 'Anything else?', tool_calls: [{ name: 'ask_user', arguments: { question: 'Anything else?', options: ['yes, more', 'no, thanks'] } }] },
  { match: 'no, thanks', text: 'Done: hello.txt is written.' },
  { match: 'hello again', text: 'A second answer, on a forked branch.' },
  { match: 'break please', text: 'Starting', error: 'the model broke down' },
  { match: 'break please', text: 'Fine on the retry.' },
  { match: 'delegate please', text: 'Delegating.', tool_calls: [{ name: 'spawn_agent', arguments: { task: 'count the files', name: 'counter' } }] },
  { match: 'count the files', text: 'There are 3 files.' },
  { match: 'spawned sub-agent', text: 'The sub-agent is on it.' },
  { match: 'finished: completed', text: 'The sub-agent reports 3 files.' },
  { match: 'remember this', text: 'Noted for the summary.' },
  { match: 'after compaction', text: 'I see the summary.' },
  // `sessiondag run` from a terminal, without the script in its environment: the session's recorded model
  { match: 'task from the terminal', text: 'Done from the terminal.' },
  { match: 'after the restart', text: 'Still here after the restart.' },
  { match: 'from the other machine', text: 'Answered on the other machine.' },
  { match: 'a session from elsewhere', text: 'Started elsewhere.' },
];
const SUMMARY = 'the user greeted and had a file written';
const PAGE = 12;
const T = 30000;
const GRAPH_VIEW = 'body[data-host="view"] #svg'; // the graph view in the sessiondag container
const GRAPH_EDITOR = 'body[data-host="editor"] #svg'; // Open Graph in Editor
const ACTIVITY = '.activitybar .action-item a[aria-label^="sessiondag"], .activitybar .action-item[aria-label^="sessiondag"]';

/** The frame of the webview whose document has `selector` (webviews are iframes in iframes). */
async function webview(page, selector, timeout = T) {
  const deadline = Date.now() + timeout;
  for (;;) {
    for (const f of page.frames()) {
      if (await f.$(selector).catch(() => null)) return f;
    }
    if (Date.now() > deadline) throw new Error(`no webview shows ${selector}`);
    await page.waitForTimeout(100);
  }
}

/** Run a command from the palette (F1), as typed by a user; the palette is reopened if it opened before
 * the extension's commands were registered. */
async function palette(page, command) {
  const [category, title] = command.split(': ');
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).filter({ hasText: category }).first();
    try {
      // a loaded machine: the palette can lose focus (a notification, an editor opening) while typed into
      await input.waitFor({ state: 'visible', timeout: T });
      await input.fill(`>${command}`, { timeout: 5000 });
      await row.waitFor({ timeout: 5000 });
      await page.keyboard.press('Enter');
      return;
    } catch (e) {
      await page.keyboard.press('Escape');
      if (attempt >= 5) throw e;
    }
  }
}

/** Type a prompt into the chat and send it, as a user does. Playwright's fill focuses the box and then inserts
 * the text into whatever has the focus; VS Code moves the focus back into a webview 50 ms after a quick input
 * closes (webviewElement's _doFocus: the workbench's body first, then the frame), so text typed right after a
 * palette command or an input box can land outside the box: the box is checked to hold the text, and the
 * prompt to be taken (the chat empties the box when it sends). */
async function send(chat, text) {
  const input = chat.locator('#input');
  for (let attempt = 0; ; attempt++) {
    await input.fill(text);
    const got = await input.inputValue();
    if (got === text) break;
    console.log(`typed ${JSON.stringify(text)} into the chat, its box holds ${JSON.stringify(got)}: typing again`);
    if (attempt >= 4) throw new Error(`the chat's input box does not keep what is typed into it (${JSON.stringify(text)})`);
  }
  await chat.click('#send');
  await chat.waitForFunction(() => document.getElementById('input').value === '', null, { timeout: T })
    .catch(() => { throw new Error(`the chat did not take the prompt ${JSON.stringify(text)} (still in its input box)`); });
}

/** `sessiondag run TASK --session ID` in another process, as from a terminal: no script in its
 * environment, the session's recorded model (the script its first turn ran on) answers. */
async function outsideRun(task, sessionId, work, env, stateDir) {
  const runEnv = { ...env, SESSIONDAG_HOME: stateDir };
  delete runEnv.SESSIONDAG_SCRIPT;
  // --in-process: another process writing the session itself, not through the daemon
  const run = spawn(SESSIONDAG, ['run', task, '--session', sessionId, '--workdir', work, '--in-process'], { env: runEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  run.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((r) => run.once('exit', r));
  assert.equal(code, 0, err);
}

// a row can move while the view refreshes (did_change): reopen the menu if it is not the row's menu
async function menu(page, row, action) {
  for (let attempt = 0; ; attempt++) {
    await row.click({ button: 'right' });
    const item = page.locator('.monaco-menu .action-label', { hasText: action });
    try {
      await item.waitFor({ timeout: 3000 });
      await item.click();
      // a click can land while the menu is re-laid out; then the item is highlighted: Enter runs it
      const open = page.locator('.monaco-menu');
      if (!(await open.waitFor({ state: 'hidden', timeout: 2000 }).then(() => true, () => false))) {
        await item.hover();
        await page.keyboard.press('Enter');
        await open.waitFor({ state: 'hidden', timeout: 3000 });
      }
      return;
    } catch (e) {
      await page.keyboard.press('Escape');
      if (attempt >= 4) throw e;
    }
  }
}

/** `git daemon --enable=receive-pack` on 127.0.0.1 serving a bare repo (git daemon takes no port 0: a free
 * port is found by binding one and closing it; ready when a connect succeeds). */
async function gitDaemon(base) {
  execFileSync('git', ['init', '-q', '--bare', path.join(base, 'sessions.git')]);
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await new Promise((resolve) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
    const proc = spawn('git', ['daemon', '--reuseaddr', '--listen=127.0.0.1', `--port=${port}`, `--base-path=${base}`, '--export-all',
      '--enable=receive-pack', base], { stdio: 'ignore' });
    for (const deadline = Date.now() + T; proc.exitCode === null && Date.now() < deadline;) {
      const up = await new Promise((resolve) => { const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); }); c.on('error', () => resolve(false)); });
      if (up) return { url: `git://127.0.0.1:${port}/sessions.git`, stop: () => proc.kill() };
      await new Promise((r) => setTimeout(r, 50));
    }
    proc.kill();
  }
  throw new Error('git daemon did not start');
}

/** The CLI of "another machine": its own state dir, no script in its environment (the session's recorded model
 * answers) unless `script` (a session it starts). */
function elsewhere(args, env, stateDir, { script = false } = {}) {
  const runEnv = { ...env, SESSIONDAG_HOME: stateDir };
  if (!script) delete runEnv.SESSIONDAG_SCRIPT;
  return execFileSync(SESSIONDAG, args, { env: runEnv, encoding: 'utf8' });
}

const treeRow = (page, text) => page.locator('.pane-body .monaco-list-row', { hasText: text }).first();

describe('the extension in code-server', { timeout: 420000 }, () => {
  let root, dirs, work, stateDir, env, cs, browser, page, shots, sessionId;
  const printed = [];

  before(async () => {
    checkSetup();
    if (!fs.existsSync(SESSIONDAG)) throw new Error(`set-up: ${SESSIONDAG} is missing; run \`make install\``);
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'sd-vsc-'));
    dirs = editorDirs(root);
    shots = dirs.shots;
    work = path.join(root, 'work');
    stateDir = path.join(root, 'state');
    fs.mkdirSync(work);
    fs.writeFileSync(path.join(work, 'README.txt'), 'a workspace for the sessiondag extension test\n');
    const script = path.join(root, 'script.json');
    fs.writeFileSync(script, JSON.stringify(SCRIPT));
    // the scripted model gets a price, so that the usage ledger has dollars to show
    const config = path.join(root, 'config.toml');
    fs.writeFileSync(config, '[prices."scripted/scripted"]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n');
    env = { ...process.env, XDG_CONFIG_HOME: dirs['xdg-config'], XDG_DATA_HOME: dirs['xdg-data'],
      XDG_CACHE_HOME: dirs['xdg-cache'], XDG_RUNTIME_DIR: dirs.run, SESSIONDAG_SCRIPT: script, SESSIONDAG_PROVIDER: 'scripted',
      SESSIONDAG_CONFIG: config };
    delete env.SESSIONDAG_HOME;
    // a small page: the branch the later steps grow gets a "load older nodes" row, the earlier ones fit
    writeSettings(dirs, { 'sessiondag.command': SESSIONDAG, 'sessiondag.stateDir': stateDir, 'sessiondag.idleTimeout': 120,
      'sessiondag.treePageSize': PAGE });
    installExtension(dirs, env);
    cs = await startCodeServer(dirs, work, env);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${cs.url}/?folder=${encodeURIComponent(work)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    await page.locator(ACTIVITY).first().waitFor({ timeout: 60000 }); // the extension's contributions are in
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    // the extension auto-started a detached daemon for stateDir: stop it
    try {
      const c = await sd.connect({ stateDir, env });
      await c.daemonStop();
      await new Promise((r) => c.onClose(r));
    } catch { /* not running */ }
    for (const p of printed) console.log(`screenshot: ${p}`);
  });

  /** The daemon the extension auto-started was started the way every client starts one, by
   * `sessiondag daemon start --wait --json`: detached (not a child of the extension host), logging to
   * <state dir>/daemon.log, which `sessiondag daemon logs` prints. */
  async function assertStartedByTheCli(c) {
    const st = await c.daemonStatus();
    assert.equal(st.log_path, path.join(stateDir, 'daemon.log'));
    const ppid = Number(fs.readFileSync(`/proc/${st.pid}/stat`, 'latin1').split(') ').pop().split(' ')[1]);
    const parent = fs.existsSync(`/proc/${ppid}/cmdline`) ? fs.readFileSync(`/proc/${ppid}/cmdline`, 'latin1') : '';
    assert.ok(!/code-server|extensionHost|bootstrap-fork/.test(parent), `the daemon's parent is ${parent}`);
    const logs = execFileSync(SESSIONDAG, ['daemon', 'logs', '-n', '0', '--state-dir', stateDir], { env, encoding: 'utf8' });
    assert.ok(logs.includes(`ready pid=${st.pid}`), logs);
  }

  /** A step of the user's story; on failure a screenshot of the workbench is saved too. */
  const step = (name, fn) => test(name, async () => {
    try {
      await fn();
    } catch (e) {
      await shot(`FAILED-${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)}`).catch(() => undefined);
      throw e;
    }
  });

  const shot = async (name) => {
    const p = path.join(shots, `${name}.png`);
    await page.screenshot({ path: p });
    printed.push(p);
  };

  step('open the chat, send a prompt, see the streamed reply', async () => {
    await palette(page, 'sessiondag: Open Chat');
    const chat = await webview(page, '#input');
    await send(chat, 'hello agent');
    await chat.locator('.msg.assistant .text', { hasText: 'streamed to VS Code in small chunks.' }).waitFor({ timeout: T });
    await chat.locator('#send:not([disabled])').waitFor({ timeout: T });
    assert.equal(await chat.locator('.msg.user .text').first().textContent(), 'hello agent');
    const c = await sd.connect({ stateDir, env });
    const { sessions } = await c.sessionList({ working_dir: fs.realpathSync(work) });
    assert.equal(sessions.length, 1);
    sessionId = sessions[0].session_id;
    await assertStartedByTheCli(c);
    await c.close();
  });

  step('grant a permission, answer a question: the file is written, listed with the turn, opens as a diff', async () => {
    const c = await sd.connect({ stateDir, env });
    await c.sessionSubscribe({ session_id: sessionId });
    // the daemon's watcher attributes a file to the turn that is open when it sees it. First make sure it
    // watches the folder (a change while no turn is open is held for the next turn) ...
    fs.writeFileSync(path.join(work, 'probe.txt'), 'seen?\n');
    for (const deadline = Date.now() + T; !((await c.daemonStatus()).pending_workspace_changes[sessionId] > 0);) {
      if (Date.now() > deadline) throw new Error('the daemon does not see changes in the workspace');
    }
    // ... then the turn stays open while the agent's question waits, and the test answers once it is in
    let timer;
    const attributed = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('hello.txt was not attributed to the open turn')), T);
      c.onSessionDidChange((p) => {
        for (const ch of p.changes) {
          const wc = ch.kind === 'update' && ch.fields.metadata && ch.fields.metadata.workspace_changes;
          if (wc && wc.some((x) => x.path === 'hello.txt')) resolve(wc);
        }
      });
    }).finally(() => clearTimeout(timer));
    const chat = await webview(page, '#input');
    await send(chat, 'please write the file');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: T });
    assert.match(await dialog.textContent(), /write hello\.txt/);
    await dialog.locator('.monaco-button', { hasText: 'Allow' }).click();
    const pick = page.locator('.quick-input-widget');
    await pick.locator('.quick-input-list .monaco-list-row', { hasText: 'no, thanks' }).waitFor({ timeout: T });
    assert.match(await pick.textContent(), /Anything else\?/);
    assert.equal(fs.readFileSync(path.join(work, 'hello.txt'), 'utf8'), 'written by the agent\n');
    await attributed;
    await c.close();
    await page.locator('.quick-input-widget input').fill('no, thanks');
    await page.keyboard.press('Enter');
    await chat.locator('.msg.assistant .text', { hasText: 'hello.txt is written' }).waitFor({ timeout: T });
    await chat.locator('.tool summary', { hasText: 'write_file' }).first().waitFor({ timeout: T });
    const change = chat.locator('.msg.user', { hasText: 'please write the file' }).locator('.change a', { hasText: 'hello.txt' });
    await change.waitFor({ timeout: T });
    await shot('chat');
    await change.click();
    await page.locator('.monaco-diff-editor').first().waitFor({ timeout: T });
  });

  step('the Sessions view shows the session, its branch and nodes', async () => {
    await page.locator(ACTIVITY).first().click();
    await treeRow(page, sessionId).waitFor({ timeout: T });
    await treeRow(page, 'you: hello agent').waitFor({ timeout: T });
    await treeRow(page, 'you: please write the file').waitFor({ timeout: T });
    await treeRow(page, 'write_file').waitFor({ timeout: T });
  });

  step('fork from the first message: a new branch in the tree and in the graph', async () => {
    await menu(page, treeRow(page, 'you: hello agent'), 'Fork Here');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: T });
    assert.equal(await input.inputValue(), 'hello agent');
    await input.fill('hello again agent');
    await page.keyboard.press('Enter');
    const chat = await webview(page, '#input');
    await chat.locator('.msg.assistant .text', { hasText: 'on a forked branch' }).waitFor({ timeout: T });
    // the chat now shows the new branch only
    assert.equal(await chat.locator('.msg.user .text', { hasText: 'please write the file' }).count(), 0);
    // the new branch is labelled by its first differing message and where it leaves the main line (not "fork <id>")
    await treeRow(page, /^hello again agent.*from the start/).waitFor({ timeout: T });
    await treeRow(page, 'you: hello again agent').waitFor({ timeout: T });
    // the graph view under the tree (built when the container opened) has drawn the fork already
    const graph = await webview(page, GRAPH_VIEW);
    await graph.locator('path.edge.fork').first().waitFor({ state: 'attached', timeout: T });
    assert.ok(await graph.locator('g.node').count() >= 6);
    assert.match(await graph.locator('#title').textContent(), /2 lanes|[3-9] lanes/);
    await shot('tree');
    // Show Session Graph from elsewhere (the Explorer showing) reveals the container with the view
    await palette(page, 'View: Show Explorer');
    await treeRow(page, 'you: hello again agent').waitFor({ state: 'hidden', timeout: T });
    await palette(page, 'sessiondag: Show Session Graph');
    await treeRow(page, 'you: hello again agent').waitFor({ timeout: T });
    await graph.locator('g.node', { hasText: 'you: hello again agent' }).click();
    await page.locator('.pane-body .monaco-list-row.selected', { hasText: 'you: hello again agent' }).waitFor({ timeout: T });
    await graph.locator('g.node.sel', { hasText: 'you: hello again agent' }).waitFor({ timeout: T });
    await shot('graph');
    // collapsed, the view is kept (retained) but redraws only once shown again (see the live-run step);
    // the tree gets the container's height for the longer branches below
    await page.locator('.pane-header[aria-expanded="true"]', { hasText: 'Graph' }).click();
    await page.locator('.pane-header[aria-expanded="false"]', { hasText: 'Graph' }).waitFor({ timeout: T });
  });

  step('context actions: name a branch, check out another, show the messages a model call received', async () => {
    await menu(page, treeRow(page, /^hello again agent/), 'Name Branch');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: T });
    await input.fill('experiment');
    await page.keyboard.press('Enter');
    await treeRow(page, /^experiment/).waitFor({ timeout: T });
    await menu(page, treeRow(page, /^main/), 'Checkout Branch');
    const chat = await webview(page, '#input');
    await chat.locator('.msg.user .text', { hasText: 'please write the file' }).waitFor({ timeout: T });
    await menu(page, treeRow(page, 'scripted: Hi! I am the scripted agent'), 'Show Messages the Model Received');
    const editor = page.locator('.monaco-editor .view-lines', { hasText: /"role":\s"system"/ });
    await editor.first().waitFor({ timeout: T });
    assert.match(await editor.first().textContent(), /"content":\s"hello\sagent"/); // monaco renders spaces as U+00A0
  });

  step('files follow the turns: the graph marks a turn that wrote a file; Restore Files to Here, Compare Files with Current (tree and chat)', async () => {
    await palette(page, 'sessiondag: Open Graph in Editor');
    const graph = await webview(page, GRAPH_EDITOR);
    await graph.locator('g.node.files', { hasText: 'you: please write the file' }).waitFor({ state: 'attached', timeout: T });
    assert.equal(await graph.locator('g.node.files', { hasText: 'you: hello agent' }).count(), 0);
    await palette(page, 'sessiondag: Show Session Graph'); // the sidebar with the Sessions tree again
    await treeRow(page, 'you: hello agent').waitFor({ timeout: T });
    // the first turn wrote no file: restoring to it takes hello.txt away (the workspace's own files stay as they were then);
    // the confirmation lists what will change (a dry run first)
    await menu(page, treeRow(page, 'you: hello agent'), 'Restore Files to Here');
    const confirm = page.locator('.monaco-dialog-box');
    await confirm.waitFor({ timeout: T });
    assert.match(await confirm.textContent(), /Restore \d+ file\(s\) to the end of the turn "hello agent"/);
    assert.match(await confirm.textContent(), /delete hello\.txt/);
    await confirm.locator('.monaco-button', { hasText: 'Restore' }).click();
    for (const deadline = Date.now() + T; fs.existsSync(path.join(work, 'hello.txt'));) {
      if (Date.now() > deadline) throw new Error('hello.txt is still there after Restore Files to Here');
      await page.waitForTimeout(100);
    }
    assert.equal(fs.readFileSync(path.join(work, 'README.txt'), 'utf8'), 'a workspace for the sessiondag extension test\n');
    await page.locator('.notifications-toasts', { hasText: /restored \d+ file/ }).first().waitFor({ timeout: T });
    // the turn that wrote it, against the files now: a diff editor with the turn's version
    await menu(page, treeRow(page, 'you: please write the file'), 'Compare Files with Current');
    const diff = page.locator('.monaco-diff-editor').first();
    await diff.waitFor({ timeout: T });
    // one diff editor per file that differs (hello.txt, probe.txt: the tabs may scroll out of sight), the last one active
    await page.locator('.tab', { hasText: /hello\.txt/ }).first().waitFor({ state: 'attached', timeout: T });
    await page.locator('.tab', { hasText: /probe\.txt/ }).first().waitFor({ state: 'attached', timeout: T });
    await page.locator('.monaco-diff-editor .view-lines', { hasText: /seen\?/ }).first().waitFor({ timeout: T });
    await shot('compare-with-current');
    // the same from the chat, on the turn's message: Compare with current, then Restore files to here
    await palette(page, 'View: Close All Editors');   // the chat panel too: it is opened again below
    await page.locator('.monaco-diff-editor').first().waitFor({ state: 'detached', timeout: T });
    for (const deadline = Date.now() + T; await webview(page, '#input', 0).then(() => true, () => false);) {
      if (Date.now() > deadline) throw new Error('the chat panel did not close');
      await page.waitForTimeout(100);
    }
    await palette(page, 'sessiondag: Open Chat');
    const chat = await webview(page, '#input');
    const turn = chat.locator('.msg.user', { hasText: 'please write the file' });
    await turn.locator('.checkpoint a.compare', { hasText: 'Compare with current' }).click();
    await page.locator('.monaco-diff-editor').first().waitFor({ timeout: T });
    await page.locator('.tab', { hasText: /hello\.txt/ }).first().waitFor({ state: 'attached', timeout: T });
    await page.locator('.tab', { hasText: 'sessiondag chat' }).first().click();
    await turn.locator('.checkpoint a.restore', { hasText: 'Restore files to here' }).click();
    const back = page.locator('.monaco-dialog-box');
    await back.waitFor({ timeout: T });
    assert.match(await back.textContent(), /add hello\.txt/);
    await shot('chat-restore-confirm');
    await back.locator('.monaco-button', { hasText: 'Restore' }).click();
    for (const deadline = Date.now() + T; !fs.existsSync(path.join(work, 'hello.txt'));) {
      if (Date.now() > deadline) throw new Error('hello.txt did not come back');
      await page.waitForTimeout(100);
    }
    assert.equal(fs.readFileSync(path.join(work, 'hello.txt'), 'utf8'), 'written by the agent\n');
    // the Graph view under the tree collapsed again, as the fork step left it (the longer branches below need the room)
    await page.locator('.pane-header[aria-expanded="true"]', { hasText: 'Graph' }).click();
    await page.locator('.pane-header[aria-expanded="false"]', { hasText: 'Graph' }).waitFor({ timeout: T });
  });

  step('a failed turn shows its error kind and message; Retry This Turn runs it again', async () => {
    await palette(page, 'sessiondag: Open Chat'); // the messages' editor may cover it
    const chat = await webview(page, '#input');
    await send(chat, 'break please');
    const err = chat.locator('.error-item', { hasText: 'the model broke down' });
    await err.waitFor({ timeout: T });
    assert.match(await err.textContent(), /Error \(ProviderError\)/);
    await chat.locator('.msg.assistant.status-error .error', { hasText: 'the model broke down' }).waitFor({ timeout: T });
    await treeRow(page, 'you: break please').waitFor({ timeout: T });
    await menu(page, treeRow(page, 'you: break please'), 'Retry This Turn');
    await chat.locator('.msg.assistant .text', { hasText: 'Fine on the retry.' }).waitFor({ timeout: T });
    assert.equal(await chat.locator('.msg.assistant.status-error').count(), 0); // the chat shows the retried branch
    // the retry that worked is the main line; the failed try is labelled by its failure
    await treeRow(page, /^failed try of turn \d+ \(error: the model broke down\)/).waitFor({ timeout: T });
  });

  step('a sub-agent: a nested item that updates when it finishes, a spawn branch in tree and graph', async () => {
    const chat = await webview(page, '#input');
    await send(chat, 'delegate please');
    const sub = chat.locator('details.subagent', { hasText: 'count the files' });
    await sub.waitFor({ timeout: T });
    await sub.locator('summary', { hasText: 'completed' }).waitFor({ timeout: T });
    await sub.locator('.text', { hasText: 'There are 3 files.' }).waitFor({ timeout: T });
    await chat.locator('.msg.followup', { hasText: "sub-agent 'counter' finished" }).waitFor({ timeout: T });
    await chat.locator('.msg.assistant .text', { hasText: 'The sub-agent reports 3 files.' }).waitFor({ timeout: T });
    await treeRow(page, /^counter/).waitFor({ timeout: T });
    // the same drawing in an editor tab, wide: the spawn branch dashed
    await palette(page, 'sessiondag: Open Graph in Editor');
    const graph = await webview(page, GRAPH_EDITOR);
    await graph.locator('path.edge.spawn').first().waitFor({ state: 'attached', timeout: T });
    await shot('subagent');
  });

  step('a `sessiondag run` started outside VS Code appears live', async () => {
    await outsideRun('task from the terminal', sessionId, work, env, stateDir);
    await treeRow(page, 'you: task from the terminal').waitFor({ timeout: T });
    await treeRow(page, 'Done from the terminal.').waitFor({ timeout: T });   // the session's model answered
    const graph = await webview(page, GRAPH_EDITOR);
    await graph.locator('g.node', { hasText: 'you: task from the terminal' }).waitFor({ timeout: T });
    await shot('live-run');
    // the graph view was collapsed (hidden) while the run came in: it did not refetch then, and draws
    // the run once expanded again (then collapsed again for the steps below)
    await page.locator('.pane-header[aria-expanded="false"]', { hasText: 'Graph' }).click();
    const view = await webview(page, GRAPH_VIEW);
    await view.locator('g.node', { hasText: 'you: task from the terminal' }).waitFor({ timeout: T });
    await page.locator('.pane-header[aria-expanded="true"]', { hasText: 'Graph' }).click();
    await page.locator('.pane-header[aria-expanded="false"]', { hasText: 'Graph' }).waitFor({ timeout: T });
  });

  step('the daemon restarts: the extension starts a new one, reconnects and follows the session again', async () => {
    const c = await sd.connect({ stateDir, env });
    const old = (await c.daemonStatus()).pid;
    const closed = new Promise((r) => c.onClose(r));
    await c.daemonStop();
    await closed;
    let pid;
    for (const deadline = Date.now() + T; !pid || pid === old;) {
      if (Date.now() > deadline) throw new Error('no new daemon after the restart');
      try {
        const n = await sd.connect({ stateDir, env }); // never auto-starts: only the extension does
        pid = (await n.daemonStatus()).pid;
        await n.close();
      } catch {
        await page.waitForTimeout(100);
      }
    }
    // the stop was announced to the extension (daemon/will_stop), not taken for a crash
    await page.locator('.notifications-toasts', { hasText: 'the daemon stopped (sessiondag daemon stop); a new one is started' }).first().waitFor({ timeout: T });
    const again = await sd.connect({ stateDir, env });
    await assertStartedByTheCli(again);   // the new one too, into the same log as the old one
    await again.close();
    await page.locator('.statusbar-item', { hasText: sessionId.slice(0, 8) }).first().waitFor({ timeout: T });
    await outsideRun('after the restart', sessionId, work, env, stateDir);
    await treeRow(page, 'you: after the restart').waitFor({ timeout: T });
  });

  step('a long branch shows its newest nodes and a row that loads older ones (get_branch paging)', async () => {
    // the current branch has grown past a page (sessiondag.treePageSize): its newest nodes are there at once
    const older = treeRow(page, /load older nodes… \(\d+ more\)/);
    await older.waitFor({ timeout: T });
    await treeRow(page, 'you: after the restart').waitFor({ timeout: T });
    const before = Number(/\((\d+) more\)/.exec(await older.textContent())[1]);
    assert.ok(before > 0);
    await shot('tree-paged');
    await older.click();
    if (before > PAGE) await treeRow(page, `load older nodes… (${before - PAGE} more)`).waitFor({ timeout: T });
    else await treeRow(page, /load older nodes/).waitFor({ state: 'detached', timeout: T });
  });

  step('Compact up to Here: a notice, and the next model call gets the summary instead of the messages', async () => {
    const chat = await webview(page, '#input');
    await send(chat, 'remember this');
    await chat.locator('.msg.assistant .text', { hasText: 'Noted for the summary.' }).waitFor({ timeout: T });
    await chat.locator('#send:not([disabled])').waitFor({ timeout: T });
    await menu(page, treeRow(page, 'scripted: Noted for the summary.'), 'Compact up to Here');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: T });
    await input.fill(SUMMARY);
    await page.keyboard.press('Enter');
    await page.locator('.notifications-toasts', { hasText: /compacted \d+ messages into a summary/ }).waitFor({ timeout: T });
    await send(chat, 'after compaction');
    await chat.locator('.msg.assistant .text', { hasText: 'I see the summary.' }).waitFor({ timeout: T });
    await chat.locator('#send:not([disabled])').waitFor({ timeout: T });
    await menu(page, treeRow(page, 'scripted: I see the summary.'), 'Show Messages the Model Received');
    const editor = page.locator('.monaco-editor .view-lines', { hasText: /the\suser\sgreeted/ });
    await editor.first().waitFor({ timeout: T });
    const text = (await editor.first().textContent()).replace(/\u00a0/g, ' ');
    assert.match(text, /after compaction/);
    assert.doesNotMatch(text, /"content": "hello agent"/); // the first prompt is summarised away
    await shot('compacted');
  });

  step('costs: each branch in the tree, each turn in the chat, the usage breakdown in an editor', async () => {
    await treeRow(page, /@\w+ · \$\d+\.\d{4}/).waitFor({ timeout: T }); // a branch row ends with its own cost
    const chat = await webview(page, '#input');
    await chat.locator('.msg.user .cost', { hasText: /turn cost: \$\d+\.\d{4} · \d+ tokens/ }).first().waitFor({ timeout: T });
    await menu(page, treeRow(page, sessionId), 'Show Usage Breakdown');
    const editor = page.locator('.monaco-editor .view-lines', { hasText: 'By sub-agent' });
    await editor.first().waitFor({ timeout: T });
    assert.match(await editor.first().textContent(), /TOTAL.*\$\d+\.\d{4}/);
    await page.locator('.tab', { hasText: 'usage.md' }).first().waitFor({ timeout: T });
    await shot('usage');
  });

  step("Show Session Git Log: the session's git history in a read-only editor", async () => {
    await menu(page, treeRow(page, sessionId), 'Show Session Git Log');
    const editor = page.locator('.monaco-editor .view-lines', { hasText: /turn\s\d+:/ });
    await editor.first().waitFor({ timeout: T });
    assert.match(await editor.first().textContent(), /commit\s[0-9a-f]{40}/);
    await page.locator('.tab', { hasText: 'git-log.txt' }).first().waitFor({ timeout: T });
    await shot('git-log');
  });

  step('the working dir goes away: the status bar says unbound, a prompt is refused with its kind; back: bound again', async () => {
    const sid8 = sessionId.slice(0, 8);
    const moved = `${work}-moved`;
    fs.renameSync(work, moved);
    try {
      const unbound = page.locator('.statusbar-item', { hasText: `${sid8} unbound` }).first();
      await unbound.waitFor({ timeout: T });
      assert.match(await unbound.getAttribute('class'), /warning-kind|has-background-color/);
      // a prompt is refused with its kind, in the chat (and a notification)
      await palette(page, 'sessiondag: Open Chat');
      const chat = await webview(page, '#input');
      await send(chat, 'while unbound');
      await chat.locator('.error-item', { hasText: 'Error (working_dir_unbound)' }).waitFor({ timeout: T });
      await chat.locator('#send:not([disabled])').waitFor({ timeout: T });
      await shot('unbound');
    } finally {
      fs.renameSync(moved, work);
    }
    await page.locator('.statusbar-item', { hasText: `${sid8} unbound` }).waitFor({ state: 'detached', timeout: T });
    await page.locator('.statusbar-item', { hasText: sid8 }).first().waitFor({ timeout: T });
  });

  step('sessions through a git remote (git daemon on 127.0.0.1): Share Session, Pull Session, Open Session from a Git Remote', async () => {
    const git = await gitDaemon(path.join(root, 'remote'));
    const other = path.join(root, 'state-elsewhere');
    try {
      // share: typed as a URL (no remote is configured), pushed under refs/sessiondag/<id>/
      await palette(page, 'sessiondag: Share Session (Push to a Git Remote)');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: T });
      await input.fill(git.url);
      await page.keyboard.press('Enter');
      await page.locator('.notifications-toasts', { hasText: `pushed session ${sessionId} to ${git.url}` }).first().waitFor({ timeout: T });
      assert.match(execFileSync('git', ['ls-remote', git.url], { encoding: 'utf8' }), new RegExp(`refs/sessiondag/${sessionId}/main`));
      // another machine clones it, continues it and pushes; Pull Session brings its turn here
      elsewhere(['sync', 'clone', git.url, sessionId, '--here', work], env, other);
      elsewhere(['run', 'from the other machine', '--session', sessionId, '--workdir', work, '--in-process'], env, other);
      elsewhere(['sync', 'push', git.url, '--session', sessionId], env, other);
      await palette(page, 'sessiondag: Pull Session from a Git Remote');
      await input.waitFor({ state: 'visible', timeout: T });
      await input.fill(git.url);
      await page.keyboard.press('Enter');
      await page.locator('.notifications-toasts', { hasText: `pulled session ${sessionId} from ${git.url}` }).first().waitFor({ timeout: T });
      await treeRow(page, 'you: from the other machine').waitFor({ timeout: T });
      await treeRow(page, 'Answered on the other machine.').waitFor({ timeout: T });
      // a session only the other machine has: listed from the remote, opened (cloned) here, in the chat
      const made = JSON.parse(elsewhere(['run', 'a session from elsewhere', '--workdir', work, '--in-process', '--json'], env, other, { script: true }));
      elsewhere(['sync', 'push', git.url, '--session', made.session_id], env, other);
      await palette(page, 'sessiondag: Open Session from a Git Remote');
      await input.waitFor({ state: 'visible', timeout: T });
      await input.fill(git.url);
      await page.keyboard.press('Enter');
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: made.session_id });
      await row.waitFor({ timeout: T });
      assert.match(await row.textContent(), /a session from elsewhere/);
      await shot('open-from-remote');
      // the focus going into the chat's webview (where VS Code gives it back, late, after the URL's input
      // box) does not close the list: it opened after a remote round trip and waits for the user
      const chat = await webview(page, '#input');
      await chat.click('#input'); // the prompt box, below the list (a click on a message would select it in the tree)
      await page.waitForFunction(() => document.activeElement?.tagName === 'IFRAME', null, { timeout: T });
      await page.evaluate(() => new Promise((r) => setTimeout(() => setTimeout(r)))); // the workbench's blur handling ran
      assert.ok(await row.isVisible(), 'the list of the remote\'s sessions closed when the focus moved');
      // picked as typed: the id into the filter (matchOnDescription), Enter
      await input.fill(made.session_id);
      await page.locator('.quick-input-list .monaco-list-row').filter({ hasNotText: made.session_id }).waitFor({ state: 'detached', timeout: T });
      await page.keyboard.press('Enter');
      await chat.locator('#session', { hasText: made.session_id }).waitFor({ timeout: T });
      await chat.locator('.msg.assistant .text', { hasText: 'Started elsewhere.' }).waitFor({ timeout: T });
      await page.locator('.notifications-toasts', { hasText: `opened session ${made.session_id} from ${git.url} (cloned)` }).first().waitFor({ timeout: T });
      // back to the session of the earlier steps
      await menu(page, treeRow(page, sessionId), 'Open Session');
      await chat.locator('#session', { hasText: sessionId }).waitFor({ timeout: T });
    } finally {
      git.stop();
    }
  });

  step('Reset Session…: after the confirmation the session is gone from the view, the store and the status bar', async () => {
    await menu(page, treeRow(page, sessionId), 'Reset Session');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: T });
    assert.match(await dialog.textContent(), new RegExp(`Reset session ${sessionId}`));
    await dialog.locator('.monaco-button', { hasText: 'Reset' }).click();
    await treeRow(page, sessionId).waitFor({ state: 'detached', timeout: T });
    await page.locator('.statusbar-item', { hasText: sessionId.slice(0, 8) }).waitFor({ state: 'detached', timeout: T });
    const chat = await webview(page, '#input');
    await chat.locator('#session', { hasText: 'no session' }).waitFor({ timeout: T });
    const c = await sd.connect({ stateDir, env });
    const { sessions } = await c.sessionList({ working_dir: fs.realpathSync(work) });
    await c.close();
    assert.equal(sessions.filter((x) => x.session_id === sessionId).length, 0);
    await shot('reset');
  });
});
