// Connecting: a Unix socket (found for the state dir, or given), a spawned `sessiondag serve --stdio`,
// and auto-start through `sessiondag daemon start --wait --json` when no daemon answers.
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { SessionDagClient } from './client';
import { candidateSockets, defaultStateDir, shortAddress } from './discovery';
import { DaemonStartError } from './errors';

export interface ConnectOptions {
  /** Socket path; default: the daemon serving `stateDir` (its pidfile, then the default path). */
  socket?: string;
  /** State dir; default: $SESSIONDAG_HOME, $XDG_STATE_HOME/sessiondag, ~/.local/state/sessiondag. */
  stateDir?: string;
  /** Start a daemon (`<command> daemon start --wait --json`) when no daemon answers. */
  autoStart?: boolean;
  /** Spawn `<command> serve --stdio` (a private daemon for this client) instead of a socket. */
  stdio?: boolean;
  /** The sessiondag executable and leading args; default ['sessiondag']. */
  command?: string[];
  /** Environment of a started daemon (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Seconds to wait for an auto-started daemon (default 20). */
  startTimeout?: number;
  /** --idle-timeout of an auto-started daemon (default 300 s; 0 = none). */
  idleTimeout?: number;
  clientName?: string;
  /** Seconds for the handshake and each answer before `daemon/ping` decides (default 30; 0 = forever). */
  timeout?: number;
}

/** Connect a Unix socket; paths over the AF_UNIX limit go through /proc/self/fd/<dirfd>/<name>. */
export function connectSocket(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    let addr: ReturnType<typeof shortAddress>;
    try { addr = shortAddress(socketPath); } catch (e) { return reject(e); }
    const s = net.createConnection(addr.address);
    s.once('connect', () => { addr.close(); s.removeAllListeners('error'); resolve(s); });
    s.once('error', (e) => { addr.close(); s.destroy(); reject(e); });
  });
}

export async function clientOverSocket(socketPath: string, clientName?: string, timeout?: number): Promise<SessionDagClient> {
  const sock = await connectSocket(socketPath);
  const conn = createMessageConnection(new SocketMessageReader(sock), new SocketMessageWriter(sock));
  const client = new SessionDagClient(conn, () => sock.destroy(), timeout);
  sock.on('close', () => setImmediate(() => { void client.close(); }));
  try {
    await client.handshake(clientName);
  } catch (e) {
    sock.destroy();   // a daemon that does not answer the handshake (SIGSTOPped) is not kept
    throw e;
  }
  return client;
}

export async function spawnStdio(opts: ConnectOptions = {}): Promise<SessionDagClient & { process: ChildProcess }> {
  const [cmd, ...lead] = opts.command ?? ['sessiondag'];
  const args = [...lead, 'serve', '--stdio', ...(opts.stateDir ? ['--state-dir', opts.stateDir] : [])];
  const proc = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'], env: opts.env ?? process.env });
  await new Promise<void>((resolve, reject) => {
    proc.once('spawn', resolve);
    proc.once('error', (e) => reject(new DaemonStartError(`cannot run ${cmd}: ${e.message}`)));
  });
  const conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  const client = new SessionDagClient(conn, () => proc.stdin?.end(), opts.timeout) as SessionDagClient & { process: ChildProcess };
  client.process = proc;
  client.peerPid = proc.pid;
  proc.once('exit', () => setImmediate(() => { void client.close(); }));
  await client.handshake(opts.clientName);
  return client;
}

async function tryConnect(paths: string[], clientName?: string, timeout?: number): Promise<SessionDagClient | undefined> {
  for (const p of paths) {
    try {
      return await clientOverSocket(p, clientName, timeout);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ECONNREFUSED' && code !== 'ENOTSOCK') throw e;
    }
  }
  return undefined;
}

/** Connect to the daemon serving the state dir; with autoStart, start one if none answers. */
export async function connect(opts: ConnectOptions = {}): Promise<SessionDagClient> {
  if (opts.stdio) return spawnStdio(opts);
  const env = opts.env ?? process.env;
  const stateDir = path.resolve(opts.stateDir ?? defaultStateDir(env));
  const paths = opts.socket ? [opts.socket] : candidateSockets(stateDir, env);
  const first = await tryConnect(paths, opts.clientName, opts.timeout);
  if (first) return first;
  if (!opts.autoStart) {
    const e = new Error(`no sessiondag daemon answers on ${paths.join(' or ')}`) as NodeJS.ErrnoException;
    e.code = 'ENOENT';
    throw e;
  }
  return autoStart(stateDir, opts, env);
}

/** What `sessiondag daemon start --wait --json` prints. */
export interface StartedDaemon { pid: number; socket: string; log?: string | null; started: boolean }

/** Start (or find) the daemon of `stateDir` the way every client does: `<command> daemon start --wait --json`
 * decides where it logs (`<state dir>/daemon.log`, what `sessiondag daemon logs` shows), detaches it,
 * waits until it answers (a daemon that lost the start race is replaced by the winner) and prints
 * {pid, socket, log, started}. A failure is a DaemonStartError with the command's own message. */
export function startDaemon(stateDir: string, opts: ConnectOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<StartedDaemon> {
  const [cmd, ...lead] = opts.command ?? ['sessiondag'];
  const idle = opts.idleTimeout ?? 300;
  const args = [...lead, 'daemon', 'start', '--wait', '--json', '--state-dir', stateDir,
    '--timeout', String(opts.startTimeout ?? 20),
    ...(opts.socket ? ['--socket', opts.socket] : []), ...(idle ? ['--idle-timeout', String(idle)] : [])];
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env, timeout: ((opts.startTimeout ?? 20) + 10) * 1000, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          const why = String(stderr || '').trim() || err.message;
          return reject(new DaemonStartError((err as NodeJS.ErrnoException).code === 'ENOENT'
            ? `cannot run ${cmd}: ${err.message}` : `${cmd} daemon start failed: ${why}`));
        }
        try {
          const info = JSON.parse(String(stdout)) as StartedDaemon;
          if (typeof info.socket !== 'string') throw new Error('no socket');
          resolve(info);
        } catch {
          reject(new DaemonStartError(`${cmd} daemon start printed no daemon: ${String(stdout).trim()}`));
        }
      });
  });
}

async function autoStart(stateDir: string, opts: ConnectOptions, env: NodeJS.ProcessEnv): Promise<SessionDagClient> {
  const info = await startDaemon(stateDir, opts, env);
  const c = await tryConnect([info.socket], opts.clientName, opts.timeout);
  if (!c) throw new DaemonStartError(`the daemon (pid ${info.pid}, log ${info.log ?? '-'}) does not answer on ${info.socket}`);
  return c;
}

