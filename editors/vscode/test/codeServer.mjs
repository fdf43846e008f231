// A real VS Code for tests: code-server 4.100.3 (installed by mk/vscode.mk into test-env/) with every
// editor directory in a temp dir, driven through Debian's chromium by playwright-core.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const extRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const repoRoot = path.resolve(extRoot, '..', '..');
export const CODE_SERVER = path.join(extRoot, 'test-env', 'node_modules', '.bin', 'code-server');
export const CHROMIUM = process.env.SESSIONDAG_CHROMIUM || '/usr/bin/chromium';
export const VSIX = path.join(extRoot, 'sessiondag-0.1.0.vsix');

/** Fails with what to run when a tool is missing (never a skip). */
export function checkSetup() {
  const missing = [];
  if (!fs.existsSync(CODE_SERVER)) missing.push(`${CODE_SERVER} (code-server 4.100.3)`);
  if (!fs.existsSync(CHROMIUM)) missing.push(`${CHROMIUM} (Debian chromium)`);
  if (!fs.existsSync(VSIX)) missing.push(`${VSIX} (the built extension)`);
  if (missing.length) throw new Error(`set-up: missing ${missing.join(', ')}; run \`make test-vscode\` (mk/vscode.mk installs them)`);
}

/** Temp dirs for everything an editor writes, and the environment that points there. */
export function editorDirs(root) {
  const d = {};
  for (const k of ['ud', 'ext', 'xdg-config', 'xdg-data', 'xdg-cache', 'run', 'shots']) {
    d[k] = path.join(root, k);
    fs.mkdirSync(d[k], { recursive: true, mode: 0o700 });
  }
  return d;
}

export function writeSettings(dirs, settings) {
  fs.mkdirSync(path.join(dirs.ud, 'User'), { recursive: true });
  fs.writeFileSync(path.join(dirs.ud, 'User', 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none', 'telemetry.telemetryLevel': 'off', 'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false, 'security.workspace.trust.enabled': false, 'update.mode': 'none',
    'workbench.tips.enabled': false, 'git.enabled': false, 'window.dialogStyle': 'custom', ...settings,
  }, null, 2));
}

export function installExtension(dirs, env) {
  execFileSync(CODE_SERVER, ['--user-data-dir', dirs.ud, '--extensions-dir', dirs.ext, '--install-extension', VSIX],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Start code-server on 127.0.0.1, port 0; resolves with {url, proc, stop} once it listens. */
export async function startCodeServer(dirs, folder, env) {
  const proc = spawn(CODE_SERVER, ['--bind-addr', '127.0.0.1:0', '--auth', 'none', '--disable-telemetry',
    '--disable-workspace-trust', '--disable-getting-started-override', '--user-data-dir', dirs.ud,
    '--extensions-dir', dirs.ext, folder], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const on = (d) => {
      log += d;
      const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) resolve(m[1]);
    };
    proc.stdout.on('data', on);
    proc.stderr.on('data', on);
    proc.once('exit', (c) => reject(new Error(`code-server exited ${c}:\n${log}`)));
  });
  return {
    url, proc, log: () => log,
    async stop() {
      if (proc.exitCode !== null) return;
      const done = new Promise((r) => proc.once('exit', r));
      try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ }
      await done;
    },
  };
}
