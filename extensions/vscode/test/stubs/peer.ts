/**
 * The other end of a JSON-RPC connection, in memory: it answers the extension's requests with
 * the test's functions and can send notifications and requests (with a cancellable token) the
 * way `kiln lsp` does. The real server is exercised by the Node integration test; this peer
 * lets the glue tests decide timing exactly.
 */

import type { CancellationTokenLike, Disposable, RpcConnection } from "../../src/protocol/client";

type Answer = (params: any) => unknown;

export class Token implements CancellationTokenLike {
  isCancellationRequested = false;
  private listeners: (() => void)[] = [];
  onCancellationRequested(listener: () => void): Disposable {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel(): void {
    this.isCancellationRequested = true;
    for (const l of this.listeners.slice()) l();
  }
}

export class Peer implements RpcConnection {
  readonly sent: { method: string; params: any; notification: boolean }[] = [];
  readonly answers = new Map<string, Answer>();
  private readonly notificationHandlers = new Map<string, (p: never) => void>();
  private readonly requestHandlers = new Map<string, (p: never, t: CancellationTokenLike) => unknown>();

  on(method: string, answer: Answer): this {
    this.answers.set(method, answer);
    return this;
  }

  async sendRequest(method: string, params: unknown): Promise<unknown> {
    this.sent.push({ method, params, notification: false });
    const answer = this.answers.get(method);
    if (!answer) throw Object.assign(new Error(`unhandled method ${method}`), { code: -32601 });
    return await answer(params);
  }

  async sendNotification(method: string, params: unknown): Promise<void> {
    this.sent.push({ method, params, notification: true });
    await this.answers.get(method)?.(params);
  }

  onNotification(method: string, handler: (p: never) => void): Disposable {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onRequest(method: string, handler: (p: never, t: CancellationTokenLike) => unknown): Disposable {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  /** Server → client notification. */
  notify(method: string, params: unknown): void {
    this.notificationHandlers.get(method)?.(params as never);
  }

  /** Server → client request; the token lets the test play `$/cancelRequest`. */
  request(method: string, params: unknown, token = new Token()): Promise<unknown> {
    const handler = this.requestHandlers.get(method);
    if (!handler) return Promise.reject(new Error(`client has no handler for ${method}`));
    return Promise.resolve(handler(params as never, token));
  }

  get listening(): string[] {
    return [...this.notificationHandlers.keys(), ...this.requestHandlers.keys()];
  }

  calls(method: string): any[] {
    return this.sent.filter((s) => s.method === method).map((s) => s.params);
  }
}
