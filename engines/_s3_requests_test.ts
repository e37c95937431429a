import assert from "node:assert/strict";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { isTransient, newS3Client } from "../tiers/s3_client.ts";
import { type LocalServer, localServer, useTestKeys } from "../tests/_local_server.ts";
import { drainBody } from "./_s3_requests.ts";

/** A server whose every GET returns `chunks` of `size` random bytes, each a separate write. */
function chunkedServer(chunks: number, size: number): LocalServer & { bytes: Uint8Array } {
  const bytes = new Uint8Array(chunks * size);
  for (let at = 0; at < bytes.byteLength; at += 65536) {
    crypto.getRandomValues(bytes.subarray(at, at + 65536));
  }
  const server = localServer(() => {
    let k = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (k === chunks) return c.close();
        c.enqueue(bytes.slice(k * size, ++k * size));
      },
    });
    return new Response(body, { headers: { "content-length": String(bytes.byteLength) } });
  });
  return Object.assign(server, { bytes });
}

Deno.test("drainBody reads a fetch body to its end into reused buffers, copying it into the block asked for", async () => {
  useTestKeys();
  await using server = chunkedServer(40, 100_000);
  const { bytes, endpoint } = server;
  const client = newS3Client({ endpoint, region: "us-east-1" }, { handler: "fetch" });
  try {
    for (let i = 0; i < 3; i++) {
      const into = new Uint8Array(bytes.byteLength);
      const get = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" }));
      const d = await drainBody(get, into);
      assert.equal(d.got, bytes.byteLength);
      assert.ok(d.first > 0);
      assert.deepEqual(into, bytes);
    }
  } finally {
    client.destroy();
  }
});

Deno.test("drainBody abandons a body that brings no byte for its idle time, as a TimeoutError", async () => {
  useTestKeys();
  let stall: () => void = () => {};
  const stalled = new Promise<void>((r) => (stall = r));
  await using server = localServer(() => {
    // The headers and a first chunk, then nothing until the test ends.
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new Uint8Array(1000));
        await stalled;
        c.close();
      },
    });
    return new Response(body, { headers: { "content-length": "2000" } });
  });
  const client = newS3Client({ endpoint: server.endpoint, region: "x" }, {
    handler: "fetch",
  });
  try {
    const get = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" }));
    await assert.rejects(drainBody(get, undefined, 200), { name: "TimeoutError" });
  } finally {
    stall();
    client.destroy();
  }
});

Deno.test("drainBody reports a body the server breaks off as a transient failure, which the engine retries", async () => {
  useTestKeys();
  // A raw HTTP server: promises 100000 bytes, sends 1000, closes the connection.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served = (async () => {
    for await (const conn of listener) {
      await conn.read(new Uint8Array(65536));
      const head = "HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n";
      await conn.write(new TextEncoder().encode(head));
      await conn.write(new Uint8Array(1000));
      conn.close();
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  const client = newS3Client({ endpoint: `http://127.0.0.1:${port}`, region: "x" }, {
    handler: "fetch",
  });
  try {
    const get = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" }));
    const e = await drainBody(get).catch((e) => e);
    assert.ok(e instanceof Error, String(e));
    assert.ok(isTransient(e), `${e.name}: ${e.message}`);
  } finally {
    client.destroy();
    listener.close();
    await served;
  }
});
