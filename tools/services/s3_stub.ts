/**
 * A trivial S3 server for `deno task bench:s3`: it discards what is uploaded
 * (remembering only each object's size) and serves fixed bytes for GETs, so
 * that a client measured against it meets no storage at all — the SDK's own
 * ceiling on this machine. It answers the few requests the s3 tier makes
 * (HeadBucket, Put/Get/HeadObject with ranges, multipart uploads, listings,
 * DeleteObjects) and ignores signatures.
 *
 * Run as its own process, so that it does not share an event loop with the
 * client under test: `deno run -A tools/services/s3_stub.ts` prints
 * `listening on http://127.0.0.1:PORT` and serves until killed.
 *
 * @module
 */

/** Largest object body served; GETs of larger objects are refused. */
const MAX_BODY = 64 * 1024 ** 2;
/** Objects up to this size are kept whole (markers); larger ones only by size. */
const KEEP_BYTES = 64 * 1024;

/** What the stub knows of an object. */
interface StubObject {
  size: number;
  bytes?: Uint8Array<ArrayBuffer>;
}

const xml = (body: string, status = 200) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`, {
    status,
    headers: { "content-type": "application/xml" },
  });

const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Reads a request body to its end, keeping at most `keep` bytes; returns its length. */
async function drain(
  req: Request,
  keep: number,
): Promise<{ size: number; bytes?: Uint8Array<ArrayBuffer> }> {
  if (!req.body) return { size: 0 };
  const kept: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    if (size + chunk.byteLength <= keep) kept.push(chunk.slice());
    size += chunk.byteLength;
  }
  if (size > keep) return { size };
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of kept) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { size, bytes };
}

/** What the stub holds: objects by `bucket/key`, and multipart uploads in progress. */
interface StubState {
  readonly fill: Uint8Array<ArrayBuffer>;
  readonly objects: Map<string, StubObject>;
  readonly uploads: Map<string, { key: string; size: number }>;
  nextUpload: number;
}

/**
 * The request handler of the stub. `fill` is served for every large object.
 *
 * @example
 * ```ts ignore
 * const server = Deno.serve({ port: 0 }, s3StubHandler(new Uint8Array(1024)));
 * ```
 */
export function s3StubHandler(fill: Uint8Array<ArrayBuffer>): (req: Request) => Promise<Response> {
  const state: StubState = { fill, objects: new Map(), uploads: new Map(), nextUpload: 0 };
  return async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const slash = url.pathname.indexOf("/", 1);
    const bucket = decodeURIComponent(
      slash < 0 ? url.pathname.slice(1) : url.pathname.slice(1, slash),
    );
    const key = slash < 0 ? "" : decodeURIComponent(url.pathname.slice(slash + 1));
    if (bucket === "") return xml("<ListAllMyBucketsResult/>");
    if (key === "") return await bucketRequest(state, req, bucket, url.searchParams);
    return await objectRequest(state, req, bucket, key, url.searchParams);
  };
}

/** A request on the bucket itself: HeadBucket, CreateBucket, DeleteObjects, listings. */
async function bucketRequest(
  state: StubState,
  req: Request,
  bucket: string,
  q: URLSearchParams,
): Promise<Response> {
  if (req.method === "HEAD" || req.method === "PUT") return new Response(null, { status: 200 });
  if (req.method === "POST" && q.has("delete")) {
    const text = await req.text();
    for (const m of text.matchAll(/<Key>([^<]*)<\/Key>/g)) {
      state.objects.delete(`${bucket}/${unescapeXml(m[1] ?? "")}`);
    }
    return xml("<DeleteResult></DeleteResult>");
  }
  if (req.method === "GET" && q.has("uploads")) {
    return xml(
      `<ListMultipartUploadsResult><Bucket>${escape(bucket)}</Bucket>` +
        "<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>",
    );
  }
  if (req.method === "GET") return listObjects(state.objects, bucket, q);
  return new Response(null, { status: 405 });
}

/** ListObjectsV2 under `prefix`, at most `max-keys`, keys below `delimiter` folded. */
function listObjects(
  objects: ReadonlyMap<string, StubObject>,
  bucket: string,
  q: URLSearchParams,
): Response {
  const prefix = `${bucket}/${q.get("prefix") ?? ""}`;
  const max = Math.min(Number(q.get("max-keys") ?? 1000), 1000);
  const delimiter = q.get("delimiter") ?? "";
  const all = [...objects.keys()].filter((k) => k.startsWith(prefix)).sort();
  // with a delimiter, keys below it fold into their common prefix, as S3 lists them
  const common = new Set<string>();
  const keys = all.filter((k) => {
    const cut = delimiter === "" ? -1 : k.indexOf(delimiter, prefix.length);
    if (cut < 0) return true;
    common.add(k.slice(bucket.length + 1, cut + delimiter.length));
    return false;
  }).slice(0, max);
  const contents = keys.map((k) =>
    `<Contents><Key>${escape(k.slice(bucket.length + 1))}</Key>` +
    `<Size>${objects.get(k)?.size ?? 0}</Size></Contents>`
  ).join("");
  const prefixes = [...common].map((p) =>
    `<CommonPrefixes><Prefix>${escape(p)}</Prefix></CommonPrefixes>`
  ).join("");
  return xml(
    `<ListBucketResult><Name>${escape(bucket)}</Name>` +
      `<KeyCount>${keys.length}</KeyCount><IsTruncated>false</IsTruncated>${contents}` +
      `${prefixes}</ListBucketResult>`,
  );
}

/** A request on one object: Put/Get/Head/DeleteObject and the multipart upload calls. */
async function objectRequest(
  state: StubState,
  req: Request,
  bucket: string,
  key: string,
  q: URLSearchParams,
): Promise<Response> {
  const id = `${bucket}/${key}`;
  switch (req.method) {
    case "PUT":
      return await putObject(state, req, id, q.get("uploadId"));
    case "POST":
      return q.has("uploads")
        ? createUpload(state, bucket, key)
        : await completeUpload(state, req, bucket, key, q.get("uploadId") ?? "");
    case "DELETE":
      if (q.has("uploadId")) state.uploads.delete(q.get("uploadId") ?? "");
      else state.objects.delete(id);
      return new Response(null, { status: 204 });
    case "HEAD":
    case "GET":
      return getObject(state, req, id, key);
    default:
      return new Response(null, { status: 405 });
  }
}

/** PutObject (small bodies kept whole) or UploadPart (only its size counted). */
async function putObject(
  state: StubState,
  req: Request,
  id: string,
  uploadId: string | null,
): Promise<Response> {
  const got = await drain(req, uploadId ? 0 : KEEP_BYTES);
  if (uploadId) {
    const u = state.uploads.get(uploadId);
    if (u) u.size += got.size;
  } else {
    state.objects.set(id, got.bytes ? { size: got.size, bytes: got.bytes } : { size: got.size });
  }
  return new Response(null, { status: 200, headers: { etag: '"stub"' } });
}

/** CreateMultipartUpload: a new upload id, `u0`, `u1`, … */
function createUpload(state: StubState, bucket: string, key: string): Response {
  const uploadId = `u${state.nextUpload++}`;
  state.uploads.set(uploadId, { key: `${bucket}/${key}`, size: 0 });
  return xml(
    `<InitiateMultipartUploadResult><Bucket>${escape(bucket)}</Bucket>` +
      `<Key>${escape(key)}</Key><UploadId>${uploadId}</UploadId>` +
      "</InitiateMultipartUploadResult>",
  );
}

/** CompleteMultipartUpload: the object takes the size of its parts. */
async function completeUpload(
  state: StubState,
  req: Request,
  bucket: string,
  key: string,
  uploadId: string,
): Promise<Response> {
  await drain(req, 0);
  const u = state.uploads.get(uploadId);
  state.uploads.delete(uploadId);
  if (u) state.objects.set(u.key, { size: u.size });
  return xml(
    `<CompleteMultipartUploadResult><Bucket>${escape(bucket)}</Bucket>` +
      `<Key>${escape(key)}</Key><ETag>"stub"</ETag></CompleteMultipartUploadResult>`,
  );
}

/** GetObject or HeadObject, whole or one `bytes=A-B` range. */
function getObject(state: StubState, req: Request, id: string, key: string): Response {
  const o = state.objects.get(id);
  if (!o) {
    return req.method === "HEAD" ? new Response(null, { status: 404 }) : xml(
      `<Error><Code>NoSuchKey</Code><Key>${escape(key)}</Key></Error>`,
      404,
    );
  }
  if (o.size > state.fill.byteLength && !o.bytes) {
    return xml("<Error><Code>InvalidRange</Code></Error>", 416);
  }
  const body = o.bytes ?? state.fill.subarray(0, o.size);
  const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.get("range") ?? "");
  const headers: Record<string, string> = { etag: '"stub"' };
  if (range) {
    const a = Number(range[1]);
    const b = Math.min(Number(range[2]), o.size - 1);
    headers["content-range"] = `bytes ${a}-${b}/${o.size}`;
    headers["content-length"] = String(b - a + 1);
    return new Response(req.method === "HEAD" ? null : body.subarray(a, b + 1), {
      status: 206,
      headers,
    });
  }
  headers["content-length"] = String(o.size);
  return new Response(req.method === "HEAD" ? null : body, { status: 200, headers });
}

function unescapeXml(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'").replace(/&amp;/g, "&");
}

/**
 * Starts the stub server in a process of its own (so that it shares no event
 * loop with the client under test); resolves with its endpoint.
 *
 * @example
 * ```ts ignore
 * const stub = await startStubProcess();
 * try { console.log(stub.endpoint); } finally { await stub.stop(); }
 * ```
 */
export async function startStubProcess(): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the stub S3 server exited before listening");
    text += value;
  }
  reader.releaseLock();
  const endpoint = /listening on (\S+)/.exec(text)?.[1];
  if (!endpoint) throw new Error(`the stub S3 server said: ${text.trim()}`);
  return {
    endpoint,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

if (import.meta.main) {
  const fill = new Uint8Array(MAX_BODY);
  for (let at = 0; at < fill.byteLength; at += 65536) {
    crypto.getRandomValues(fill.subarray(at, at + 65536));
  }
  Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ hostname, port }) => console.log(`listening on http://${hostname}:${port}`),
  }, s3StubHandler(fill));
}
