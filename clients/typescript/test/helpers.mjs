// Test helpers: a real daemon subprocess per test file (the worktree's .venv/bin/sessiondag).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The sessiondag executable: $SESSIONDAG_BIN or <repo>/.venv/bin/sessiondag; a clear set-up error otherwise. */
export function sessiondagBin() {
  const bin = process.env.SESSIONDAG_BIN || path.join(repoRoot, '.venv', 'bin', 'sessiondag');
  if (!fs.existsSync(bin)) {
    throw new Error(`set-up: ${bin} is missing; run \`make install\` at the repository root (or set SESSIONDAG_BIN)`);
  }
  return bin;
}

export function tempDir(prefix = 'sd-ts-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A clean environment for a daemon: private runtime dir, no inherited sessiondag settings. */
export function isolatedEnv(root, extra = {}) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('SESSIONDAG_') && k !== 'SESSIONDAG_BIN') delete env[k];
  const run = path.join(root, 'run');
  fs.mkdirSync(run, { recursive: true, mode: 0o700 });
  return { ...env, XDG_RUNTIME_DIR: run, XDG_STATE_HOME: path.join(root, 'xdg-state'), ...extra };
}

/** Start `sessiondag serve --socket` and resolve once it printed its readiness line. */
export async function startDaemon({ script, env: extraEnv = {}, args = [] } = {}) {
  const root = tempDir();
  const stateDir = path.join(root, 'state');
  const socket = path.join(root, 'd.sock');
  const env = isolatedEnv(root, extraEnv);
  if (script !== undefined) {
    const f = path.join(root, 'script.json');
    fs.writeFileSync(f, JSON.stringify(script));
    env.SESSIONDAG_SCRIPT = f;
  }
  const proc = spawn(sessiondagBin(), ['serve', '--socket', socket, '--state-dir', stateDir, ...args],
    { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  await new Promise((resolve, reject) => {
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (d) => {
      log += d;
      if (log.includes('sessiondag: ready')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`daemon exited ${code} before ready:\n${log}`)));
  });
  proc.stderr.resume();
  return {
    root, stateDir, socket, env, proc,
    log: () => log,
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** Resolve with the first value for which `pick` returns non-undefined, from events pushed into `sink`. */
export function waitFor(register, pick, what = 'event', ms = 20000) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { d.dispose(); reject(new Error(`timed out waiting for ${what}`)); }, ms);
    const d = register((ev) => {
      const v = pick(ev);
      if (v !== undefined && v !== false) { clearTimeout(t); d.dispose(); resolve(v); }
    });
  });
}

export function runCli(args, env) {
  return new Promise((resolve, reject) => {
    const p = spawn(sessiondagBin(), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.once('error', reject);
    p.once('exit', (code) => resolve({ code, out, err }));
  });
}
