/**
 * A local HTTP server for tests of the S3 client and its engines: a handler
 * on a free loopback port, stopped when disposed.
 *
 * @module
 */

/** A server on `127.0.0.1`, stopped (its connections closed) when disposed. */
export interface LocalServer extends AsyncDisposable {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
}

/**
 * Serves `handler` on a free loopback port.
 *
 * @example
 * ```ts ignore
 * await using server = localServer(() => new Response("ok"));
 * const client = newS3Client({ endpoint: server.endpoint, region: "us-east-1" });
 * ```
 */
export function localServer(handler: Deno.ServeHandler<Deno.NetAddr>): LocalServer {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Sets the credentials the SDK signs test requests with (the servers here ignore them). */
export function useTestKeys(): void {
  Deno.env.set("AWS_ACCESS_KEY_ID", "TESTKEY");
  Deno.env.set("AWS_SECRET_ACCESS_KEY", "test-secret");
}
