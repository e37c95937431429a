/**
 * A node:http server listening on loopback whose connections can be cut at
 * once: what the fault proxy and the S3 retry tests stand their servers on.
 *
 * @module
 */

import type http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A listening server: its URL, and a close that drops every open connection first. */
export interface LoopbackServer {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** Drops every open connection, then closes the server. */
  close(): Promise<void>;
}

/**
 * Listens with `server` on a free port of 127.0.0.1, keeping its open
 * connections so {@linkcode LoopbackServer.close} need not wait for clients
 * that keep them alive.
 *
 * @example
 * ```ts
 * import http from "node:http";
 * import { listenOnLoopback } from "./loopback_server.ts";
 * const s = await listenOnLoopback(http.createServer((_q, r) => r.end("ok")));
 * console.assert((await (await fetch(s.endpoint)).text()) === "ok");
 * await s.close();
 * ```
 */
export async function listenOnLoopback(server: http.Server): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
