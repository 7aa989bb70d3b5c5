// The page's one JSON-RPC 2.0 peer: one message per WebSocket text frame,
// requests matched to answers by id, notifications fanned out by method, and
// a reconnect that keeps trying when the server goes away (ecp-web keeps
// serving the page while ecpd restarts behind it).

export interface RpcErrorBody { code: number; message: string; data?: unknown }

export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(body: RpcErrorBody) {
    super(body.message);
    this.code = body.code;
    this.data = body.data;
  }
}

export type ConnectionState = "connecting" | "open" | "closed";
type NotificationHandler = (params: any) => void;
type RequestHandler = (params: any) => Promise<unknown> | unknown;

interface Pending { resolve: (v: any) => void; reject: (e: Error) => void }

export class Rpc {
  clientId = 0;
  state: ConnectionState = "closed";
  /** What `initialize` answered on the current connection. */
  serverInfo: any = null;

  private socket: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly notificationHandlers = new Map<string, Set<NotificationHandler>>();
  private readonly requestHandlers = new Map<string, RequestHandler>();
  private readonly stateHandlers = new Set<(s: ConnectionState) => void>();
  private readonly readyHandlers = new Set<(reconnected: boolean) => void>();
  private openedBefore = false;
  private retryDelayMs = 250;

  constructor(private readonly url: string, private readonly clientName = "ecp-web") {}

  /** Connects, and reconnects whenever the socket closes. */
  start(): void { this.connect(); }

  request<T = any>(method: string, params: object = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      if (!this.socket || this.state !== "open") {
        reject(new RpcError({ code: -32000, message: `not connected (${method})` }));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  notify(method: string, params: object = {}): void {
    if (this.socket && this.state === "open")
      this.socket.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
  }

  /** Subscribes to a notification; returns the unsubscribe function. */
  on(method: string, handler: NotificationHandler): () => void {
    let set = this.notificationHandlers.get(method);
    if (!set) { set = new Set(); this.notificationHandlers.set(method, set); }
    set.add(handler);
    return () => set!.delete(handler);
  }

  /** Answers requests the server sends to the page. */
  handle(method: string, handler: RequestHandler): void { this.requestHandlers.set(method, handler); }

  onState(handler: (s: ConnectionState) => void): void { this.stateHandlers.add(handler); }

  /** Runs after every `initialize` is answered: `reconnected` is true after the first. */
  onReady(handler: (reconnected: boolean) => void): void { this.readyHandlers.add(handler); }

  private setState(s: ConnectionState): void {
    this.state = s;
    for (const h of this.stateHandlers) h(s);
  }

  private connect(): void {
    this.setState("connecting");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.onopen = async () => {
      this.state = "open";
      try {
        const init = await this.request("initialize", {
          clientInfo: { name: this.clientName },
          capabilities: { positionEncodings: ["utf-16"] },
        });
        this.serverInfo = init;
        this.clientId = init.clientId ?? 0;
        this.notify("initialized", {});
        this.retryDelayMs = 250;
        this.setState("open");
        const reconnected = this.openedBefore;
        this.openedBefore = true;
        for (const h of this.readyHandlers) h(reconnected);
      } catch (e) {
        console.error("initialize failed", e);
        socket.close();
      }
    };
    socket.onmessage = (ev) => this.dispatch(String(ev.data));
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      for (const p of this.pending.values()) p.reject(new RpcError({ code: -32000, message: "connection closed" }));
      this.pending.clear();
      this.setState("closed");
      setTimeout(() => this.connect(), this.retryDelayMs);
      this.retryDelayMs = Math.min(this.retryDelayMs * 2, 4000);
    };
  }

  private dispatch(text: string): void {
    let msg: any;
    try { msg = JSON.parse(text); } catch { console.error("unparsable message", text.slice(0, 200)); return; }
    if (msg.method === undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new RpcError(msg.error)); else p.resolve(msg.result);
      return;
    }
    if (msg.id !== undefined) { void this.answer(msg); return; }
    const handlers = this.notificationHandlers.get(msg.method);
    if (handlers) for (const h of [...handlers]) {
      try { h(msg.params); } catch (e) { console.error(`handler of ${msg.method} failed`, e); }
    }
  }

  private async answer(msg: any): Promise<void> {
    const handler = this.requestHandlers.get(msg.method);
    const reply = (body: object) => this.socket?.send(JSON.stringify({ jsonrpc: "2.0", id: msg.id, ...body }));
    if (!handler) { reply({ error: { code: -32601, message: `method not found: ${msg.method}` } }); return; }
    try { reply({ result: (await handler(msg.params)) ?? null }); }
    catch (e) { reply({ error: { code: -32603, message: String(e) } }); }
  }
}
