// Where the daemon for a state dir lives: the same rules as the daemon (store/handles.py,
// rpc/transports.py) and every other client, checked against tests/fixtures/discovery.json. State dir: explicit, $SESSIONDAG_HOME, $XDG_STATE_HOME/sessiondag,
// ~/.local/state/sessiondag. Socket: <runtime dir>/sd-<sha256(realpath(state dir))[:16]>.sock where the
// runtime dir is $XDG_RUNTIME_DIR/sessiondag (if $XDG_RUNTIME_DIR is a dir) or /tmp/sessiondag-<uid>.
// Never the config file: store.state_dir is not a file setting (the daemon refuses a file that sets it).
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SESSIONDAG_HOME) return path.resolve(env.SESSIONDAG_HOME);
  const xdg = env.XDG_STATE_HOME || path.join(env.HOME || os.homedir(), '.local', 'state');
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

/** Whether `pid` names a live process: a positive integer (kill(0) and kill(-1) reach groups), a
 * process that exists, and not a zombie (exited, not yet reaped by its parent). */
export function pidAlive(pid: unknown): boolean {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/)[0] !== 'Z';
  } catch {
    return true;
  }
}

/** Where a daemon of `stateDir` records itself (pid, socket, tcp, log, version). */
export function pidFilePath(stateDir: string): string {
  return path.join(stateDir, 'daemon.pid');
}

/** <state>/daemon.pid of a daemon that is alive, or undefined. */
export function readPidFile(stateDir: string): PidFile | undefined {
  let pf: unknown;
  try {
    pf = JSON.parse(fs.readFileSync(pidFilePath(stateDir), 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof pf !== 'object' || pf === null || Array.isArray(pf)) return undefined;
  return pidAlive((pf as PidFile).pid) ? pf as PidFile : undefined;
}

/** Where the daemon of `stateDir` listens: its live pidfile's socket, else the default path. */
export function socketFor(stateDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const pf = readPidFile(stateDir);
  return pf && typeof pf.socket === 'string' ? pf.socket : defaultSocketPath(stateDir, env);
}

export const SUN_PATH_MAX = 107;

/** An AF_UNIX address for `socketPath` within the kernel's limit: the path itself up to 106 bytes,
 * else /proc/self/fd/<fd of its directory>/<name> (close() releases the fd); a name too long even
 * so is refused with ENAMETOOLONG. */
export function shortAddress(socketPath: string): { address: string; close: () => void } {
  if (Buffer.byteLength(socketPath) <= SUN_PATH_MAX - 1) return { address: socketPath, close: () => {} };
  const name = path.basename(socketPath);
  const fd = fs.openSync(path.dirname(path.resolve(socketPath)), 'r');
  const address = `/proc/self/fd/${fd}/${name}`;
  let open = true;
  const close = () => { if (open) { open = false; fs.closeSync(fd); } };
  if (Buffer.byteLength(address) > SUN_PATH_MAX - 1) {
    close();
    const e = new Error(`socket name ${JSON.stringify(name)} is too long for AF_UNIX`) as NodeJS.ErrnoException;
    e.code = 'ENAMETOOLONG';
    throw e;
  }
  return { address, close };
}

/** Socket paths to try for a state dir, best first: the live daemon's pidfile, then the default. */
export function candidateSockets(stateDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  const pf = readPidFile(stateDir);
  if (pf && typeof pf.socket === 'string') out.push(pf.socket);
  const def = defaultSocketPath(stateDir, env);
  if (!out.includes(def)) out.push(def);
  return out;
}
