// The client: one connection to a daemon, the generated typed methods over it, listeners for the
// daemon's notifications and answers to its requests (agent/ask_user, agent/request_permission).
import {
  CancellationToken, ConnectionError, ErrorCodes, MessageConnection, ParameterStructures, ResponseError,
} from 'vscode-jsonrpc/node';
import {
  CancellationLike, ClientRequests, Disposable, GeneratedMethods, InitializeResult, SERVER_NOTIFICATIONS,
  SERVER_REQUESTS, ServerNotifications, ServerRequests, Transport,
} from './generated/protocol';
import { ConnectionClosedError, DaemonNotResponding, typedError } from './errors';

/** Seconds a connection's handshake and each answer may take before `daemon/ping` is asked (default). */
export const DEFAULT_TIMEOUT = 30;
const PROBE = 'daemon/ping';

type AnyHandler = (params: any) => unknown;

export class SessionDagClient extends GeneratedMethods implements Transport {
  server?: InitializeResult;
  private readonly listeners = new Map<string, Set<AnyHandler>>();
  private readonly answerers = new Map<string, AnyHandler>();
  private readonly closeListeners = new Set<(err?: Error) => void>();
  private closed = false;

  /** The daemon's pid when the transport tells (a spawned stdio daemon); named by DaemonNotResponding. */
  peerPid?: number;

  /**
   * `timeout` (seconds; 0 = wait forever): an answer not there by then is not given up at once (a turn
   * may take minutes): the client asks `daemon/ping`, which the daemon answers from its event loop
   * whatever its workers do; answered, it keeps waiting; not answered within the timeout either, the
   * call rejects with DaemonNotResponding. The handshake gets the timeout without the ping.
   */
  constructor(private readonly conn: MessageConnection, private readonly closer: () => void = () => {},
    readonly timeout: number = DEFAULT_TIMEOUT) {
    super();
    for (const m of SERVER_NOTIFICATIONS) {
      conn.onNotification(m, (params: unknown) => {
        for (const h of [...(this.listeners.get(m) ?? [])]) {
          try { h(params); } catch (e) { console.error(`sessiondag-client: ${m} listener failed:`, e); }
        }
      });
    }
    for (const m of SERVER_REQUESTS) {
      conn.onRequest(m, async (params: unknown) => {
        const h = this.answerers.get(m);
        if (!h) return new ResponseError(ErrorCodes.MethodNotFound, `client has no handler for ${m}`);
        try {
          return await h(params);
        } catch (e) {
          return new ResponseError(ErrorCodes.InternalError, e instanceof Error ? e.message : String(e));
        }
      });
    }
    // deferred: responses that arrived with the close are still in the connection's message queue
    conn.onClose(() => setImmediate(() => this.markClosed()));
    conn.onError(([err]: [Error, unknown, unknown]) => { if (!this.closed) console.error('sessiondag-client: connection error:', err.message); });
    conn.listen();
  }

  protected transport(): Transport { return this; }

  get isClosed(): boolean { return this.closed; }

  /** LSP-style handshake; connect() calls it. */
  async handshake(clientName = 'sessiondag-client', token?: string): Promise<InitializeResult> {
    this.server = await this.request('initialize', {
      client_info: { name: clientName, pid: process.pid }, ...(token !== undefined ? { token } : {}),
    });
    return this.server;
  }

  async request<M extends keyof ClientRequests>(method: M, params: ClientRequests[M]['params'],
    token?: CancellationLike): Promise<ClientRequests[M]['result']> {
    if (this.closed) throw new ConnectionClosedError('the connection to the daemon is closed');
    try {
      const answer: Promise<ClientRequests[M]['result']> = token === undefined
        ? this.conn.sendRequest(method, ParameterStructures.byName, params ?? {})
        : this.conn.sendRequest(method, ParameterStructures.byName, params ?? {}, token as CancellationToken);
      return await this.withDeadline(method, answer, method !== 'initialize');
    } catch (e) {
      throw this.mapError(e);
    }
  }

  private async withDeadline<T>(method: string, answer: Promise<T>, probe: boolean): Promise<T> {
    if (!this.timeout) return answer;
    const late = Symbol('late');
    const within = async <U>(p: Promise<U>): Promise<U | typeof late> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([p, new Promise<typeof late>((r) => { timer = setTimeout(() => r(late), this.timeout * 1000); })]);
      } finally {
        clearTimeout(timer);
      }
    };
    for (;;) {
      const got = await within(answer);
      if (got !== late) return got as T;
      if (!probe || this.closed) break;
      const ping = this.conn.sendRequest(PROBE, ParameterStructures.byName, {});
      ping.catch(() => { /* the connection closed: the answer's own rejection says so */ });
      if (await within(ping) === late) break;
    }
    answer.catch(() => { /* given up */ });
    throw new DaemonNotResponding(method, this.timeout, this.peerPid);
  }

  /** Any method by name (for methods a newer daemon has and this client's schema lacks). */
  async call(method: string, params: object = {}, token?: CancellationLike): Promise<unknown> {
    return this.request(method as keyof ClientRequests, params as never, token);
  }

  onNotification<M extends keyof ServerNotifications>(method: M, handler: (params: ServerNotifications[M]) => void): Disposable {
    let set = this.listeners.get(method);
    if (!set) this.listeners.set(method, (set = new Set()));
    set.add(handler as AnyHandler);
    return { dispose: () => set!.delete(handler as AnyHandler) };
  }

  onRequest<M extends keyof ServerRequests>(method: M,
    handler: (params: ServerRequests[M]['params']) => ServerRequests[M]['result'] | Promise<ServerRequests[M]['result']>): Disposable {
    this.answerers.set(method, handler as AnyHandler);
    return { dispose: () => { if (this.answerers.get(method) === handler) this.answerers.delete(method); } };
  }

  /** Called once when the connection closes (daemon stopped, socket gone, close()). */
  onClose(listener: (err?: Error) => void): Disposable {
    if (this.closed) { listener(); return { dispose() {} }; }
    this.closeListeners.add(listener);
    return { dispose: () => this.closeListeners.delete(listener) };
  }

  /** `exit` then close the connection (the daemon keeps running for other clients). */
  async close(): Promise<void> {
    if (this.closed) return;
    try { await this.conn.sendNotification('exit'); } catch { /* already gone */ }
    this.markClosed();
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    try { this.conn.dispose(); } catch { /* ignore */ }
    try { this.closer(); } catch { /* ignore */ }
    for (const l of [...this.closeListeners]) l();
    this.closeListeners.clear();
  }

  private mapError(e: unknown): unknown {
    if (e instanceof ConnectionError) return new ConnectionClosedError(e.message);
    if (e instanceof ResponseError && e.code === ErrorCodes.PendingResponseRejected) {
      return new ConnectionClosedError(e.message);
    }
    return typedError(e);
  }
}
