import assert from "node:assert/strict";
import {
  CompleteMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { HttpRequest as SdkRequest, HttpResponse } from "@smithy/core/protocols";
import { type LocalServer, localServer, useTestKeys } from "../tests/_local_server.ts";
import type { HttpRequest } from "@smithy/types";
import { ConfigError } from "../core/errors.ts";
import {
  codeOf,
  HANDLER_ENV_VAR,
  handlerFromEnv,
  isTransient,
  newS3Client,
  type S3HttpHandler,
} from "./s3_client.ts";

/**
 * An HTTP server that answers the first request to each path with `fault`
 * (503 Slow Down), then serves: a PUT is read to its end and remembered, a
 * GET returns what was PUT. It records each request's method, path and
 * headers.
 */
interface Seen {
  method: string;
  path: string;
  headers: Headers;
}

function faultyServer(fault: number): LocalServer & { seen: Seen[] } {
  const seen: Seen[] = [];
  const stored = new Map<string, Uint8Array<ArrayBuffer>>();
  const failed = new Set<string>();
  const server = localServer(async (req) => {
    const path = new URL(req.url).pathname;
    seen.push({ method: req.method, path, headers: req.headers });
    const body = new Uint8Array(await req.arrayBuffer());
    if (!failed.has(`${req.method} ${path}`)) {
      failed.add(`${req.method} ${path}`);
      return new Response("<Error><Code>SlowDown</Code></Error>", { status: fault });
    }
    if (req.method === "PUT") {
      stored.set(path, body);
      return new Response(null, { headers: { etag: '"e"' } });
    }
    const bytes = stored.get(path);
    return bytes === undefined
      ? new Response("<Error><Code>NoSuchKey</Code></Error>", { status: 404 })
      : new Response(bytes, { headers: { "content-length": String(bytes.byteLength) } });
  });
  return Object.assign(server, { seen });
}

for (const handler of ["fetch", "node"] as S3HttpHandler[]) {
  Deno.test(`the ${handler} handler keeps the SDK's retries: a 503 once, then the PUT and the GET go through`, async () => {
    useTestKeys();
    await using server = faultyServer(503);
    const { seen, endpoint } = server;
    const client = newS3Client({ endpoint, region: "us-east-1" }, { handler });
    try {
      // a view into a larger buffer, as the engines' PUT bodies are
      const body = crypto.getRandomValues(new Uint8Array(65536)).subarray(16, 16 + 65504);
      const put = await client.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: body }));
      assert.equal(put.$metadata.attempts, 2);
      const get = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" }));
      assert.equal(get.$metadata.attempts, 2);
      assert.deepEqual(await get.Body!.transformToByteArray(), body);
      assert.deepEqual(seen.map((s) => s.method), ["PUT", "PUT", "GET", "GET"]);
      for (const s of seen.filter((s) => s.method === "PUT")) {
        // Signed, its body not hashed.
        assert.match(s.headers.get("authorization") ?? "", /^AWS4-HMAC-SHA256 /);
        assert.equal(s.headers.get("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
        // its length said, not sent in chunks (S3 refuses a PUT without Content-Length)
        assert.equal(s.headers.get("content-length"), "65504");
        assert.equal(s.headers.get("transfer-encoding"), null);
      }
    } finally {
      client.destroy();
    }
  });
}

for (const handler of ["fetch", "node"] as S3HttpHandler[]) {
  Deno.test(`the ${handler} handler names a refused connection ECONNREFUSED, and the SDK retries it`, async () => {
    useTestKeys();
    // A port nothing listens on: bound, then closed.
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    const endpoint = `http://127.0.0.1:${port}`;
    const client = newS3Client({ endpoint, region: "us-east-1" }, { handler, maxAttempts: 2 });
    try {
      const e = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" })).catch((e) => e);
      assert.equal(codeOf(e), "ECONNREFUSED", String(e));
      assert.equal(e.$metadata?.attempts, 2, "retried once");
      assert.ok(isTransient(e));
    } finally {
      client.destroy();
    }
  });
}

Deno.test(`${HANDLER_ENV_VAR} picks the handler, and anything but fetch or node is refused naming it`, () => {
  const before = Deno.env.get(HANDLER_ENV_VAR);
  try {
    Deno.env.delete(HANDLER_ENV_VAR);
    assert.equal(handlerFromEnv(), "fetch");
    Deno.env.set(HANDLER_ENV_VAR, "node");
    assert.equal(handlerFromEnv(), "node");
    Deno.env.set(HANDLER_ENV_VAR, "curl");
    assert.throws(() => handlerFromEnv(), (e) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /TIERBENCH_S3_HTTP="curl" is neither fetch nor node/);
      return true;
    });
  } finally {
    if (before === undefined) Deno.env.delete(HANDLER_ENV_VAR);
    else Deno.env.set(HANDLER_ENV_VAR, before);
  }
});

Deno.test("the fetch handler abandons an attempt whose answer has not begun within the idle timeout (a TimeoutError, retried) and sends the query string", async () => {
  useTestKeys();
  const stalled = Promise.withResolvers<void>();
  const urls: string[] = [];
  await using server = localServer(async (req) => {
    urls.push(req.url);
    // the first request never answers; the client gives up on it
    if (urls.length === 1) await stalled.promise;
    return new Response("abc", { headers: { "content-length": "3" } });
  });
  const causes: string[] = [];
  const client = newS3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
  }, {
    handler: "fetch",
    idleTimeoutMs: 200,
    onRetry: (cause) => causes.push(cause),
  });
  try {
    const t0 = performance.now();
    const get = await client.send(
      new GetObjectCommand({ Bucket: "b", Key: "k", VersionId: "v 1" }),
    );
    assert.equal(await get.Body!.transformToString(), "abc");
    assert.equal(get.$metadata.attempts, 2);
    assert.deepEqual(causes, ["timeout"]);
    assert.ok(performance.now() - t0 < 5000, "the stalled attempt was abandoned in time");
    assert.match(urls[1]!, /\/b\/k\?versionId=v%201&x-id=GetObject$/);
  } finally {
    stalled.resolve();
    client.destroy();
  }
});

Deno.test("the fetch handler: the caller's abort signal fails the request as an AbortError, before the answer and while its body streams", async () => {
  useTestKeys();
  const hold = Promise.withResolvers<void>();
  let n = 0;
  await using server = localServer(async () => {
    if (n++ === 0) await hold.promise; // no answer
    // an answer whose body never ends
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(16));
      },
    });
    return new Response(body);
  });
  const client = newS3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
  }, {
    handler: "fetch",
  });
  try {
    const before = new AbortController();
    setTimeout(() => before.abort(), 100);
    const e = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" }), {
      abortSignal: before.signal,
    }).catch((e) => e);
    assert.equal(e?.name, "AbortError", String(e));
    hold.resolve();
    const during = new AbortController();
    const get = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k" }), {
      abortSignal: during.signal,
    });
    const reader = (get.Body as unknown as ReadableStream<Uint8Array>).getReader();
    assert.equal((await reader.read()).value?.byteLength, 16);
    during.abort();
    await assert.rejects(reader.read());
  } finally {
    client.destroy();
  }
});

Deno.test("a client makes its request signer once, not once per request", async () => {
  useTestKeys();
  const client = newS3Client({ endpoint: "http://127.0.0.1:1", region: "us-east-1" });
  try {
    const signer = (client.config as unknown as { signer: (s?: unknown) => Promise<unknown> })
      .signer;
    const first = await signer(undefined);
    assert.equal(await signer(undefined), first);
    assert.match(String(first?.constructor.name), /Signature/);
  } finally {
    client.destroy();
  }
});

Deno.test("a client derives its signing key once per credentials and day, anew for others", async () => {
  useTestKeys();
  const client = newS3Client({ endpoint: "http://127.0.0.1:1", region: "us-east-1" });
  try {
    const signer = await (client.config as unknown as { signer: () => Promise<unknown> }).signer();
    const v4 = (signer as {
      sigv4Signer: {
        getSigningKey(
          c: object,
          region: string,
          day: string,
          service?: string,
        ): Promise<Uint8Array>;
      };
    }).sigv4Signer;
    const a = { accessKeyId: "A", secretAccessKey: "secret-a" };
    const b = { accessKeyId: "A", secretAccessKey: "secret-b" };
    const key = v4.getSigningKey(a, "us-east-1", "20261127", "s3");
    assert.equal(v4.getSigningKey(a, "us-east-1", "20261127", "s3"), key);
    const nextDay = v4.getSigningKey(a, "us-east-1", "20261128", "s3");
    assert.notEqual(nextDay, key);
    assert.notDeepEqual(await nextDay, await key);
    assert.notDeepEqual(await v4.getSigningKey(b, "us-east-1", "20261127", "s3"), await key);
    assert.equal((await key).byteLength, 32);
  } finally {
    client.destroy();
  }
});

for (const handler of ["fetch", "node"] as S3HttpHandler[]) {
  Deno.test(`the ${handler} handler hands the SDK every header of an answer, a repeated one joined`, async () => {
    useTestKeys();
    const meta = Array.from(
      { length: 20 },
      (_, i): [string, string] => [`x-amz-meta-m${i}`, `v${i}`],
    );
    await using server = localServer(() =>
      new Response(null, {
        headers: [...meta, ["x-amz-meta-twice", "1"], ["x-amz-meta-twice", "3"], ["etag", '"e"']],
      })
    );
    const client = newS3Client({ endpoint: server.endpoint, region: "us-east-1" }, { handler });
    try {
      const r = await client.send(new HeadObjectCommand({ Bucket: "b", Key: "k" }));
      assert.deepEqual(r.Metadata, {
        ...Object.fromEntries(meta.map(([k, v]) => [k.slice("x-amz-meta-".length), v])),
        twice: "1, 3",
      });
      assert.equal(r.ETag, '"e"');
    } finally {
      client.destroy();
    }
  });
}

Deno.test("the fetch handler: a PUT answered 200 with no bytes succeeds, one answered 200 with an S3 error is retried", async () => {
  useTestKeys();
  let puts = 0;
  await using server = localServer(async (req) => {
    await req.arrayBuffer();
    // the first PUT: 200 whose body is an error (S3 does this), then 200 with no body
    if (puts++ === 0) return new Response("<Error><Code>InternalError</Code></Error>");
    return new Response(null, { headers: { etag: '"e"' } });
  });
  const endpoint = server.endpoint;
  const client = newS3Client({ endpoint, region: "us-east-1" }, { handler: "fetch" });
  try {
    const r = await client.send(
      new PutObjectCommand({ Bucket: "b", Key: "k", Body: new Uint8Array(10) }),
    );
    assert.equal(r.ETag, '"e"');
    assert.equal(r.$metadata.attempts, 2);
    assert.equal(puts, 2);
  } finally {
    client.destroy();
  }
});

for (const [handler, expect] of [["fetch", null], ["node", "100-continue"]] as const) {
  const how = expect === null ? "without" : "with";
  Deno.test(`the ${handler} handler sends a PUT of 3 MiB ${how} Expect: 100-continue`, async () => {
    useTestKeys();
    const seen: (string | null)[] = [];
    await using server = localServer(async (req) => {
      seen.push(req.headers.get("expect"));
      await req.arrayBuffer();
      return new Response(null, { headers: { etag: '"e"' } });
    });
    const endpoint = server.endpoint;
    const client = newS3Client({ endpoint, region: "us-east-1" }, { handler });
    try {
      const Body = new Uint8Array(3 << 20);
      await client.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body }));
      // fetch never waits for 100 Continue: the header would only make the server send one
      assert.deepEqual(seen, [expect]);
    } finally {
      client.destroy();
    }
  });
}

Deno.test("a client keeps the middleware S3 needs (signing, retries, lengths, host, serde) and sends the SDK's User-Agent less its per-request feature list", async () => {
  useTestKeys();
  const seen: Headers[] = [];
  await using server = localServer(async (req) => {
    seen.push(req.headers);
    await req.arrayBuffer();
    return new Response(null, { headers: { etag: '"e"' } });
  });
  const endpoint = server.endpoint;
  const client = newS3Client({ endpoint, region: "us-east-1" });
  // the SDK's client as it comes, for its User-Agent
  const plain = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true });
  try {
    const names = client.middlewareStack.identify().join("\n");
    for (
      const kept of [
        "serializerMiddleware",
        "contentLengthMiddleware",
        "hostHeaderMiddleware",
        "retryMiddleware",
        "httpSigningMiddleware",
        "deserializerMiddleware",
        "validateBucketNameMiddleware",
      ]
    ) assert.match(names, new RegExp(`^${kept} `, "m"));
    for (
      const gone of ["loggerMiddleware", "recursionDetectionMiddleware", "getUserAgentMiddleware"]
    ) {
      assert.doesNotMatch(names, new RegExp(`^${gone} `, "m"));
    }
    const Body = new Uint8Array(1024);
    await client.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body }));
    await client.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body }));
    await plain.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body }));
    const [first, second, sdk] = seen;
    const signed =
      /^AWS4-HMAC-SHA256 Credential=TESTKEY\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=[0-9a-f]{64}$/;
    for (const h of [first!, second!]) {
      const headers = signed.exec(h.get("authorization") ?? "")?.[1]?.split(";");
      assert.ok(headers, h.get("authorization") ?? "no authorization");
      for (const name of ["host", "content-length", "x-amz-date", "x-amz-content-sha256"]) {
        assert.ok(headers.includes(name), `${name} is not signed: ${headers}`);
      }
      assert.equal(h.get("content-length"), "1024");
      assert.equal(h.get("user-agent"), sdk!.get("user-agent")!.replace(/ m\/\S+$/, ""));
      assert.equal(h.get("x-amz-user-agent"), sdk!.get("x-amz-user-agent"));
    }
    assert.match(first!.get("user-agent")!, /^aws-sdk-js\/\S+ .* api\/s3#\S+$/);
  } finally {
    client.destroy();
    plain.destroy();
  }
});

Deno.test("a client signs a request as the SDK as it comes signs it, to the byte", async () => {
  useTestKeys();
  const endpoint = "http://127.0.0.1:9";
  const client = newS3Client({ endpoint, region: "us-east-1" });
  const plain = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true });
  type Signer = { sign(r: SdkRequest, o: object): Promise<SdkRequest> };
  const signerOf = (c: S3Client) => (c.config as unknown as { signer(): Promise<Signer> }).signer();
  try {
    const [ours, sdk] = await Promise.all([signerOf(client), signerOf(plain)]);
    const request = (method: string, body?: Uint8Array) =>
      new SdkRequest({
        method,
        protocol: "http:",
        hostname: "127.0.0.1",
        port: 9,
        path: "/b/dir/k%20~é",
        query: { "x-id": method === "GET" ? "GetObject" : "PutObject", versionId: "v 1" },
        headers: { host: "127.0.0.1:9", "x-amz-meta-a": " x  y ", "content-length": "3" },
        body,
      });
    // two days, so that each signer derives and then reuses its signing key for each
    for (const day of ["2026-11-27T10:00:00Z", "2026-11-28T23:59:59Z", "2026-11-27T10:00:01Z"]) {
      const o = { signingDate: new Date(day), signingRegion: "us-east-1", signingService: "s3" };
      for (
        const [method, body] of [["GET", undefined], ["PUT", new Uint8Array([1, 2, 3])]] as const
      ) {
        const a = await ours.sign(request(method, body), o);
        const b = await sdk.sign(request(method, body), o);
        assert.equal(a.headers["authorization"], b.headers["authorization"]);
        assert.equal(a.headers["x-amz-content-sha256"], b.headers["x-amz-content-sha256"]);
      }
    }
  } finally {
    client.destroy();
    plain.destroy();
  }
});

/** What the SDK hands its HTTP handler, as plain values to compare. */
interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  signed: string[];
  body: string;
}

/** Headers that differ from request to request, or by design (`x-amz-content-sha256`: UNSIGNED-PAYLOAD). */
const VARYING = new Set([
  "authorization",
  "x-amz-date",
  "user-agent",
  "x-amz-user-agent",
  "amz-sdk-invocation-id",
  "x-amz-content-sha256",
]);

/**
 * Makes `client` hand its requests to a recorder instead of the network:
 * answers are `answer(request)`, a status and headers with an XML or empty body.
 */
function recordRequests(
  client: S3Client,
  answer: (method: string) => { status: number; headers: Record<string, string>; body: string },
): SentRequest[] {
  const sent: SentRequest[] = [];
  (client.config as unknown as { requestHandler: unknown }).requestHandler = {
    handle: (req: HttpRequest) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (!VARYING.has(k)) headers[k] = v;
      const query = new URLSearchParams(req.query as Record<string, string>).toString();
      const body = req.body instanceof Uint8Array
        ? `${req.body.byteLength} bytes`
        : String(req.body ?? "");
      sent.push({
        method: req.method,
        url: `${req.protocol}//${req.hostname}:${req.port}${req.path}?${query}`,
        headers,
        signed: /SignedHeaders=([^,]+)/.exec(req.headers.authorization ?? "")?.[1]?.split(";") ??
          [],
        body,
      });
      const a = answer(req.method);
      const bytes = new TextEncoder().encode(a.body);
      return Promise.resolve({
        response: new HttpResponse({
          statusCode: a.status,
          headers: { ...a.headers, "content-length": String(bytes.byteLength) },
          // a GET's body is a stream, as the handlers give it
          body: req.method === "GET"
            ? new ReadableStream({
              start(c) {
                c.enqueue(bytes);
                c.close();
              },
            })
            : bytes,
        }),
      });
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
  };
  return sent;
}

Deno.test("a client sends what the SDK as it comes sends (path, query, headers, signed headers, body) and reads the answers alike", async () => {
  useTestKeys();
  const loc = { endpoint: "http://127.0.0.1:9000", region: "eu-west-3" };
  const ours = newS3Client(loc, { maxAttempts: 1 });
  const plain = new S3Client({
    endpoint: loc.endpoint,
    region: loc.region,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
  });
  let mode: "ok" | "not found" | "empty" = "ok";
  const answer = (method: string) =>
    mode === "empty" ? { status: 200, headers: {}, body: "" } : mode === "not found"
      ? {
        status: 404,
        headers: { "x-amz-request-id": "r404", "content-type": "application/xml" },
        body: "<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>",
      }
      : method === "POST"
      ? {
        status: 200,
        headers: { "content-type": "application/xml" },
        body: "<DeleteResult><Deleted><Key>a b</Key></Deleted></DeleteResult>",
      }
      : { status: 200, headers: { etag: '"e1"', "x-amz-request-id": "r1" }, body: "" };
  const sentOurs = recordRequests(ours, answer);
  const sentPlain = recordRequests(plain, answer);
  const key = "dir/a b+c#?é~*'()!";
  const commands = () => [
    new GetObjectCommand({ Bucket: "bkt", Key: key, Range: "bytes=0-9", VersionId: "v 1" }),
    new PutObjectCommand({ Bucket: "bkt", Key: key, Body: new Uint8Array(100) }),
    new HeadObjectCommand({ Bucket: "other.bucket", Key: "k" }),
    new ListObjectsV2Command({ Bucket: "bkt", Prefix: "p/", ContinuationToken: "t=1&x" }),
    new DeleteObjectsCommand({ Bucket: "bkt", Delete: { Objects: [{ Key: "a b" }] } }),
  ];
  try {
    for (const [i, [a, b]] of commands().map((c, i) => [c, commands()[i]!] as const).entries()) {
      const outOurs = await ours.send(a as never) as unknown as Record<string, unknown>;
      const outPlain = await plain.send(b as never) as unknown as Record<string, unknown>;
      const { $metadata: _m1, Body: _b1, ...restOurs } = outOurs;
      const { $metadata: _m2, Body: _b2, ...restPlain } = outPlain;
      assert.deepEqual(restOurs, restPlain, `answer of command ${i}`);
      const { headers: h1, signed: s1, ...r1 } = sentOurs[i]!;
      const { headers: h2, signed: s2, ...r2 } = sentPlain[i]!;
      assert.deepEqual(r1, r2, `command ${i}`);
      assert.deepEqual(h1, h2, `headers of command ${i}`);
      assert.deepEqual(s1, s2, `signed headers of command ${i}`);
    }
    // an error answer: the same error, named and with its status and request id
    mode = "not found";
    const e1 = await ours.send(new GetObjectCommand({ Bucket: "bkt", Key: "k" })).catch((e) => e);
    const e2 = await plain.send(new GetObjectCommand({ Bucket: "bkt", Key: "k" })).catch((e) => e);
    assert.equal(e1.name, "NoSuchKey");
    assert.equal(e1.name, e2.name);
    assert.equal(e1.message, e2.message);
    assert.equal(e1.$metadata.httpStatusCode, 404);
    assert.equal(e1.$metadata.requestId, e2.$metadata.requestId);
    // a completed upload answered 200 with no body: S3's error, as the SDK names it
    mode = "empty";
    const complete = () =>
      new CompleteMultipartUploadCommand({
        Bucket: "bkt",
        Key: "k",
        UploadId: "u",
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"e"' }] },
      });
    const c1 = await ours.send(complete()).catch((e) => e);
    const c2 = await plain.send(complete()).catch((e) => e);
    assert.equal(c1.name, "InternalError");
    assert.equal(c1.name, c2.name);
    assert.equal(c1.$metadata.httpStatusCode, c2.$metadata.httpStatusCode);
    await assert.rejects(
      ours.send(
        new GetObjectCommand({
          Bucket: "arn:aws:s3:us-east-1:123456789012:accesspoint/x",
          Key: "k",
        }),
      ),
      /Path-style addressing cannot be used with ARN buckets/,
    );
  } finally {
    ours.destroy();
    plain.destroy();
  }
});
