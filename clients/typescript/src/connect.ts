// Connecting: a Unix socket (found for the state dir, or given), a spawned `sessiondag serve --stdio`,
// and auto-start of a detached `sessiondag serve --socket` when no daemon answers.
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { SessionDagClient } from './client';
import { candidateSockets, daemonLogPath, defaultSocketPath, defaultStateDir } from './discovery';
import { DaemonStartError } from './errors';

const SUN_PATH_MAX = 107;

export interface ConnectOptions {
  /** Socket path; default: the daemon serving `stateDir` (its pidfile, then the default path). */
  socket?: string;
  /** State dir; default: $SESSIONDAG_HOME, $XDG_STATE_HOME/sessiondag, ~/.local/state/sessiondag. */
  stateDir?: string;
  /** Start `<command> serve --socket` when no daemon answers. */
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
  let fd: number | undefined;
  let addr = socketPath;
  if (Buffer.byteLength(socketPath) > SUN_PATH_MAX - 1) {
    fd = fs.openSync(path.dirname(path.resolve(socketPath)), 'r');
    addr = `/proc/self/fd/${fd}/${path.basename(socketPath)}`;
  }
  return new Promise((resolve, reject) => {
    const s = net.createConnection(addr);
    const done = () => { if (fd !== undefined) { fs.closeSync(fd); fd = undefined; } };
    s.once('connect', () => { done(); s.removeAllListeners('error'); resolve(s); });
    s.once('error', (e) => { done(); s.destroy(); reject(e); });
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

async function autoStart(stateDir: string, opts: ConnectOptions, env: NodeJS.ProcessEnv): Promise<SessionDagClient> {
  const [cmd, ...lead] = opts.command ?? ['sessiondag'];
  const logPath = daemonLogPath(stateDir, env);
  const log = fs.openSync(logPath, 'a');
  const idle = opts.idleTimeout ?? 300;
  const args = [...lead, 'serve', '--socket', ...(opts.socket ? [opts.socket] : []), '--state-dir', stateDir,
    ...(idle ? ['--idle-timeout', String(idle)] : [])];
  const logStart = fs.fstatSync(log).size;
  const proc = spawn(cmd, args, { detached: true, stdio: ['ignore', log, log], env });
  fs.closeSync(log);
  let exited: { code: number | null; error?: Error } | undefined;
  proc.once('exit', (code) => { exited = { code }; });
  proc.once('error', (error) => { exited = { code: null, error }; });
  proc.unref();
  const paths = opts.socket ? [opts.socket] : [defaultSocketPath(stateDir, env)];
  const deadline = Date.now() + (opts.startTimeout ?? 20) * 1000;
  // Readiness: the socket answers (the daemon binds it only when it is ready to serve). A daemon
  // that lost the race to another one exits 3: then that other daemon is the one to reach.
  for (let delay = 10; ; delay = Math.min(delay * 2, 100)) {
    const c = await tryConnect(exited?.code === 3 ? candidateSockets(stateDir, env) : paths, opts.clientName, opts.timeout);
    if (c) return c;
    if (exited && exited.code !== 3) {
      const tail = readTail(logPath, logStart);
      throw new DaemonStartError(exited.error ? `cannot run ${cmd}: ${exited.error.message}`
        : `sessiondag serve exited with status ${exited.code}${tail ? `:\n${tail}` : ''} (log: ${logPath})`);
    }
    if (Date.now() > deadline) {
      throw new DaemonStartError(`sessiondag serve did not become ready in ${opts.startTimeout ?? 20} s (log: ${logPath})`);
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}

function readTail(file: string, from: number): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(from).trim().split('\n').slice(-10).join('\n');
  } catch {
    return '';
  }
}
