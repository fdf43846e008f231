// Where the daemon for a state dir lives: the same rules as the daemon (store/handles.py,
// rpc/transports.py). State dir: explicit, $SESSIONDAG_HOME, $XDG_STATE_HOME/sessiondag,
// ~/.local/state/sessiondag. Socket: <runtime dir>/sd-<sha256(realpath(state dir))[:16]>.sock where the
// runtime dir is $XDG_RUNTIME_DIR/sessiondag (if $XDG_RUNTIME_DIR is a dir) or /tmp/sessiondag-<uid>.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SESSIONDAG_HOME) return path.resolve(env.SESSIONDAG_HOME);
  const xdg = env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(xdg, 'sessiondag');
}

/** realpath that, like Python's os.path.realpath, also works for paths that do not exist yet. */
export function realpathLoose(p: string): string {
  const abs = path.resolve(p);
  try {
    return fs.realpathSync.native(abs);
  } catch {
    const parent = path.dirname(abs);
    if (parent === abs) return abs;
    return path.join(realpathLoose(parent), path.basename(abs));
  }
}

export function stateKey(stateDir: string): string {
  return createHash('sha256').update(realpathLoose(stateDir)).digest('hex').slice(0, 16);
}

export function runtimeDir(env: NodeJS.ProcessEnv = process.env, create = false): string {
  const base = env.XDG_RUNTIME_DIR;
  let isDir = false;
  try { isDir = !!base && fs.statSync(base).isDirectory(); } catch { /* missing */ }
  const d = isDir ? path.join(base as string, 'sessiondag') : `/tmp/sessiondag-${process.getuid ? process.getuid() : 0}`;
  if (create) {
    fs.mkdirSync(d, { recursive: true, mode: 0o700 });
    const st = fs.lstatSync(d);
    if (!st.isDirectory() || (process.getuid && st.uid !== process.getuid())) {
      throw new Error(`${d} is not a directory owned by uid ${process.getuid?.()}; refusing to use it`);
    }
    if ((st.mode & 0o777) !== 0o700) fs.chmodSync(d, 0o700);
  }
  return d;
}

export function defaultSocketPath(stateDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(runtimeDir(env), `sd-${stateKey(stateDir)}.sock`);
}

/** Where a daemon started for `stateDir` logs: `sessiondag daemon start` decides it (its pidfile
 * names it too); the same file `sessiondag daemon logs` prints. */
export function daemonLogPath(stateDir: string): string {
  return path.join(stateDir, 'daemon.log');
}

export interface PidFile { pid: number; socket?: string | null; tcp?: string | null; token_file?: string | null }

/** <state>/daemon.pid of a daemon that is alive, or undefined. */
export function readPidFile(stateDir: string): PidFile | undefined {
  try {
    const pf = JSON.parse(fs.readFileSync(path.join(stateDir, 'daemon.pid'), 'utf8')) as PidFile;
    if (typeof pf.pid !== 'number') return undefined;
    process.kill(pf.pid, 0);
    return pf;
  } catch {
    return undefined;
  }
}

/** Socket paths to try for a state dir, best first: the live daemon's pidfile, then the default. */
export function candidateSockets(stateDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  const pf = readPidFile(stateDir);
  if (pf && pf.socket) out.push(pf.socket);
  const def = defaultSocketPath(stateDir, env);
  if (!out.includes(def)) out.push(def);
  return out;
}
