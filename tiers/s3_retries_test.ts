/**
 * Retries of the S3 client below the fault proxy's storms, each against a
 * server that answers a script: a request re-sent by Deno's node:http after
 * a reset and then left unanswered, and a body that breaks off mid-answer.
 *
 * @module
 */

import assert from "node:assert/strict";
import http from "node:http";
import { listenOnLoopback } from "../core/loopback_server.ts";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import type { RetryCause } from "../core/job_protocol.ts";
import { S3Error } from "../core/errors.ts";
import { newS3Client, type S3Location, withBodyRetries } from "./s3_client.ts";

/** What the scripted server does with one request. */
type Step = "ok" | "reset" | "stall" | "half";

const BODY = new TextEncoder().encode(`{"run_id":"r","pad":"${"p".repeat(4000)}"}`);

/**
 * A server on loopback that answers its n-th request by `script[n]` (the
 * last step for every request after): `ok` the body whole, `reset` the
 * connection dropped before any answer, `stall` no answer at all, `half`
 * the headers and half the body, then the connection dropped.
 */
async function scripted(script: Step[]) {
  let n = 0;
  const server = http.createServer((req, res) => {
    const step = script[Math.min(n++, script.length - 1)];
    req.resume();
    req.on("end", () => {
      if (step === "stall") return;
      if (step === "reset") return void req.socket.destroy();
      res.writeHead(200, { "content-length": String(BODY.byteLength) });
      if (step === "ok") return void res.end(BODY);
      res.write(BODY.subarray(0, BODY.byteLength / 2), () => res.socket?.destroy());
    });
  });
  const listening = await listenOnLoopback(server);
  const loc: S3Location = { endpoint: listening.endpoint, region: "us-east-1" };
  return {
    loc,
    get requests() {
      return n;
    },
    [Symbol.asyncDispose]: () => listening.close(),
  };
}

const CREDENTIALS = { accessKeyId: "AKIDTEST", secretAccessKey: "test-secret" };

function clientOf(loc: S3Location, idleTimeoutMs: number, retries: RetryCause[]) {
  const client = newS3Client(loc, { idleTimeoutMs, onRetry: (c) => retries.push(c) });
  client.config.credentials = () => Promise.resolve(CREDENTIALS);
  return client;
}

const get = new GetObjectCommand({ Bucket: "b", Key: "k" });

Deno.test({
  name:
    "a GET that the HTTP client sends again by itself after a reset, and that then gets no answer, is abandoned at the idle timeout and retried, long before the caller's deadline",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // the first request leaves a kept-alive connection; the second's reset on it makes
    // Deno's node:http send the request again on a new connection, below the SDK's retries
    await using server = await scripted(["ok", "reset", "stall", "ok"]);
    const retries: RetryCause[] = [];
    const client = clientOf(server.loc, 1000, retries);
    try {
      await (await client.send(get)).Body!.transformToByteArray();
      const t0 = performance.now();
      const r = await client.send(get, { abortSignal: AbortSignal.timeout(10_000) });
      const bytes = await r.Body!.transformToByteArray();
      const ms = performance.now() - t0;
      assert.equal(bytes.byteLength, BODY.byteLength);
      assert.equal(server.requests, 4, "the warm-up, the reset, the stalled one and its retry");
      assert.deepEqual(retries, ["timeout"]);
      // 1 s idle, then the retry: well under the caller's 10 s even on a loaded machine
      assert.ok(ms < 6000, `answered after ${Math.round(ms)} ms`);
    } finally {
      client.destroy();
    }
  },
});

Deno.test({
  name:
    "withBodyRetries: a body that breaks off is fetched again and counted as a connection retry; one that always does fails naming the body and the attempts",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const ctx = (loc: S3Location) => ({ operation: "GetObject", bucket: "b", key: "k", loc });
    {
      await using server = await scripted(["half", "half", "ok"]);
      const retries: RetryCause[] = [];
      const client = clientOf(server.loc, 5000, retries);
      try {
        const counted: RetryCause[] = [];
        const bytes = await withBodyRetries(
          ctx(server.loc),
          () => client.send(get),
          (r) => r.Body!.transformToByteArray(),
          (c) => counted.push(c),
        );
        assert.equal(bytes.byteLength, BODY.byteLength);
        // a reset just after the headers may still reach the SDK before its answer does
        assert.equal(retries.length + counted.length, 2, `${retries} / ${counted}`);
        assert.deepEqual([...retries, ...counted], ["connection", "connection"]);
      } finally {
        client.destroy();
      }
    }
    {
      await using server = await scripted(["half"]);
      const client = clientOf(server.loc, 5000, []);
      try {
        const e = await withBodyRetries(
          ctx(server.loc),
          () => client.send(get),
          (r) => r.Body!.transformToByteArray(),
        ).then(() => undefined, (e) => e);
        assert.ok(e instanceof S3Error, String(e));
        // ECONNRESET from node:http; Deno's fetch words it otherwise
        assert.match(e.message, /^s3 GetObject( \(body\))? s3:\/\/b\/k: .+ after 4 attempts/);
      } finally {
        client.destroy();
      }
    }
  },
});
