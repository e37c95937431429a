/**
 * CPU per request of the s3 tier's client (`newS3Client`, the engines'
 * `putObject`/`getObject`), measured alone:
 *
 * - on the stub (its own process): loops of PutObject and GetObject at a
 *   depth, for each size bench:s3 measures, with this process's CPU time
 *   (every thread) over the requests completed;
 * - with `--no-network`: the SDK's own work per request only, its request
 *   handler answering at once (a PUT's empty answer, a GET's 16 bytes),
 *   one request at a time; the least and the median of five rounds. A last
 *   row gives the part of it that is the client's SigV4 signer alone,
 *   signing a GetObject's request.
 *
 * - with `--layers`: on the stub, each shape measured three ways in turn,
 *   rounds alternating, so that the difference between two is what one layer
 *   of the tier's path adds: `fetch` (unsigned HTTP, as bench:s3's raw
 *   loop), `handler` (the client's request handler given the request the SDK
 *   signed: its headers, its deadline, its answer), `client` (the whole
 *   client, as the engines send and read). The median of the rounds.
 *
 * ```sh
 * deno run -A tools/bench/s3_sdk_cpu.ts [seconds] [op prefix, e.g. "PUT 64"]
 * deno run -A tools/bench/s3_sdk_cpu.ts --no-network
 * deno run -A tools/bench/s3_sdk_cpu.ts --layers [rounds] [op prefix]
 * ```
 *
 * To see where the time goes, V8's sampling profiler (`deno run -A
 * --v8-flags=--prof …`, then `node --prof-process isolate-*.log`), or perf
 * with V8's symbols (`perf record -g deno run -A
 * --v8-flags=--perf-basic-prof,--interpreted-frames-native-stack …`, then
 * `perf report --children`). The client's middleware is listed first.
 *
 * @module
 */

import process from "node:process";
import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { HttpRequest as SdkRequest, HttpResponse } from "@smithy/core/protocols";
import type {
  FinalizeHandler,
  FinalizeHandlerArguments,
  HttpRequest,
  MetadataBearer,
} from "@smithy/types";
import { fetchBody, newS3Client } from "../../tiers/s3_client.ts";
import { drainBody, getObject, putObject } from "../../engines/mod.ts";
import { median } from "../../core/stats.ts";
import { startStubProcess } from "../services/s3_stub.ts";

const SHAPES = [
  { op: "GET", size: 1 << 20, depth: 8 },
  { op: "GET", size: 8 << 20, depth: 8 },
  { op: "GET", size: 64 << 10, depth: 32 },
  { op: "PUT", size: 1 << 20, depth: 8 },
  { op: "PUT", size: 8 << 20, depth: 8 },
  { op: "PUT", size: 64 << 10, depth: 32 },
] as const;

/** This process's CPU time so far, µs (every thread). */
function cpu(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** The stub's bucket every mode reads and writes. */
const BUCKET = "bench";

/**
 * GETs `key` as the engines do and reads its body into `into` with a BYOB
 * reader; returns the buffer, which the reads moved to a new ArrayBuffer.
 */
async function getInto(client: S3Client, key: string, into: ArrayBuffer): Promise<ArrayBuffer> {
  const r = await getObject(client, BUCKET, key);
  const reader = (r.Body as ReadableStream<Uint8Array>).getReader({ mode: "byob" });
  let buf = new Uint8Array(into);
  for (let at = 0;;) {
    const { done, value } = await reader.read(buf.subarray(at));
    // the read moved the buffer, ended or not
    if (value !== undefined) buf = new Uint8Array(value.buffer);
    if (done || value === undefined) break;
    at = (at + value.byteLength) % buf.byteLength;
  }
  return buf.buffer as ArrayBuffer;
}

/** A shape as its line names it: "GET 1 MiB", "PUT 64 KiB". */
function labelOf(s: { op: string; size: number }): string {
  return `${s.op} ${s.size >= 1 << 20 ? `${s.size >> 20} MiB` : `${s.size >> 10} KiB`}`;
}

/** `requests` loops of `one` for `ms`: the requests completed. */
async function loops(
  requests: number,
  ms: number,
  one: (i: number) => Promise<void>,
): Promise<number> {
  let n = 0;
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: requests }, async (_, i) => {
    for (; performance.now() < end; n++) await one(i);
  }));
  return n;
}

/** One shape on the stub, its objects laid out: what a mode measures it with. */
interface Laid {
  readonly client: S3Client;
  readonly endpoint: string;
  readonly shape: (typeof SHAPES)[number];
  /** The shape as its line names it ({@linkcode labelOf}). */
  readonly label: string;
  readonly body: Uint8Array<ArrayBuffer>;
  /** The key of lane `i`'s object. */
  readonly key: (i: number) => string;
}

/**
 * Starts the stub and a client (handed to `opened` first), and for each
 * shape whose label starts with `only` PUTs one object per lane under
 * `prefix` and calls `measure`; stops both at the end.
 */
async function eachShapeOnStub(
  prefix: string,
  only: string | undefined,
  measure: (laid: Laid) => Promise<void>,
  opened: (client: S3Client) => void = () => {},
): Promise<void> {
  const stub = await startStubProcess();
  const client = newS3Client({ endpoint: stub.endpoint, region: "us-east-1" });
  opened(client);
  try {
    for (const shape of SHAPES) {
      const label = labelOf(shape);
      if (only !== undefined && !label.startsWith(only)) continue;
      const body = new Uint8Array(shape.size).fill(7);
      const key = (i: number) => `${prefix}/${shape.size}/${i}`;
      await Promise.all(
        Array.from({ length: shape.depth }, (_, i) => putObject(client, BUCKET, key(i), body)),
      );
      await measure({ client, endpoint: stub.endpoint, shape, label, body, key });
    }
  } finally {
    client.destroy();
    await stub.stop();
  }
}

/** The shapes on the stub, `seconds` each after 0.3 s of warm-up. */
function onStub(seconds: number, only: string | undefined): Promise<void> {
  const identify = (client: S3Client) => console.log(client.middlewareStack.identify().join("\n"));
  return eachShapeOnStub("cpu", only, async ({ client, shape: s, label, body, key }) => {
    const into = Array.from({ length: s.depth }, () => new ArrayBuffer(s.size));
    const one = async (i: number) => {
      if (s.op === "PUT") await putObject(client, BUCKET, key(i), body);
      else into[i] = await getInto(client, key(i), into[i]!);
    };
    await loops(s.depth, 300, one);
    const c0 = cpu();
    const t0 = performance.now();
    const n = await loops(s.depth, seconds * 1000, one);
    const us = (cpu() - c0) / n;
    const mbs = (n * s.size) / ((performance.now() - t0) * 1000);
    console.log(
      `${label} ×${s.depth}\t${us.toFixed(0)} µs CPU/req\t${mbs.toFixed(0)} MB/s\t${n} req`,
    );
  }, identify);
}

/** A request handler that answers at once: the SDK's work without the network's. */
function answerAtOnce(client: S3Client): void {
  (client.config as { requestHandler: unknown }).requestHandler = {
    handle: (req: HttpRequest) => {
      const get = req.method === "GET";
      const body = get
        ? new ReadableStream({
          start(c) {
            c.enqueue(new Uint8Array(16));
            c.close();
          },
        })
        : new Uint8Array(0);
      const headers = { "content-length": get ? "16" : "0", etag: '"e"' };
      return Promise.resolve({ response: new HttpResponse({ statusCode: 200, headers, body }) });
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
  };
}

/** What the client's SigV4 signer is called with. */
interface Signer {
  sign(request: SdkRequest, options: object): Promise<unknown>;
}

/** The client's signer, as its signing middleware gets it. */
function signerOf(client: S3Client): Promise<Signer> {
  return (client.config as unknown as { signer(): Promise<Signer> }).signer();
}

/** A GetObject's request as the signer is given it (the headers the client sends). */
function getRequest(): SdkRequest {
  return new SdkRequest({
    method: "GET",
    protocol: "http:",
    hostname: "127.0.0.1",
    port: 9,
    path: "/b/k/1",
    query: { "x-id": "GetObject" },
    headers: {
      host: "127.0.0.1:9",
      "user-agent": "aws-sdk-js/3 ua/2.1 os/linux lang/js md/deno api/s3#3",
      "x-amz-user-agent": "aws-sdk-js/3",
      "amz-sdk-invocation-id": crypto.randomUUID(),
      "amz-sdk-request": "attempt=1; max=4",
      "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
    },
  });
}

/** PutObject (1 KiB) and GetObject through the SDK with no network, one at a time, and signing alone. */
async function noNetwork(): Promise<void> {
  const client = newS3Client({ endpoint: "http://127.0.0.1:9", region: "us-east-1" });
  answerAtOnce(client);
  const Body = new Uint8Array(1024);
  const put = async () => {
    await client.send(new PutObjectCommand({ Bucket: "b", Key: "k/1", Body }));
  };
  const get = async () => {
    const r = await client.send(new GetObjectCommand({ Bucket: "b", Key: "k/1" }));
    await r.Body!.transformToByteArray();
  };
  const signer = await signerOf(client);
  const sign = async () => {
    await signer.sign(getRequest(), { signingRegion: "us-east-1", signingService: "s3" });
  };
  for (
    const [name, op] of [["PutObject", put], ["GetObject", get], ["sign alone", sign]] as const
  ) {
    for (let i = 0; i < 3000; i++) await op();
    const rounds: number[] = [];
    for (let r = 0; r < 5; r++) {
      const c0 = cpu();
      for (let i = 0; i < 4000; i++) await op();
      rounds.push((cpu() - c0) / 4000);
    }
    rounds.sort((a, b) => a - b);
    console.log(
      `${name}\tleast ${rounds[0]!.toFixed(1)} µs CPU/req\tmedian ${rounds[2]!.toFixed(1)}`,
    );
  }
  client.destroy();
}

/** One request of a layer: GET or PUT object `i` of a shape. */
type LayerRequest = (i: number) => Promise<void>;

/**
 * The request a client of its own signs for one PUT or GET of `key`, as its
 * signing middleware hands it on (a client of its own: the measured one
 * keeps each command's middleware as first resolved).
 */
async function signedRequest(
  endpoint: string,
  op: "GET" | "PUT",
  key: string,
  body: Uint8Array,
): Promise<HttpRequest> {
  const client = newS3Client({ endpoint, region: "us-east-1" });
  let signed: HttpRequest | undefined;
  const capture =
    (next: FinalizeHandler<object, MetadataBearer>) => (args: FinalizeHandlerArguments<object>) => {
      signed = args.request as HttpRequest;
      return next(args);
    };
  client.middlewareStack.addRelativeTo(capture, {
    name: "layersCapture",
    relation: "after",
    toMiddleware: "httpSigningMiddleware",
  });
  try {
    if (op === "PUT") await putObject(client, BUCKET, key, body);
    else await drainBody(await getObject(client, BUCKET, key));
  } finally {
    client.destroy();
  }
  if (signed === undefined) throw new Error("the client sent no signed request to capture");
  return signed;
}

/** Reads a GET's body to its end, as the engines do. */
async function drained(body: unknown): Promise<void> {
  await drainBody({ Body: body } as GetObjectCommandOutput);
}

/** The three layers of one shape, each request to object `key(i)`. */
async function layersOf(
  client: S3Client,
  endpoint: string,
  op: "GET" | "PUT",
  key: (i: number) => string,
  body: Uint8Array<ArrayBuffer>,
): Promise<Record<string, LayerRequest>> {
  const handler = client.config.requestHandler as unknown as {
    handle(r: HttpRequest): Promise<{ response: { body: unknown } }>;
  };
  const signed = await signedRequest(endpoint, op, key(0), body);
  return {
    fetch: async (i) => {
      const url = `${endpoint}/${BUCKET}/${key(i)}`;
      const res = await fetch(url, op === "GET" ? {} : { method: "PUT", body: fetchBody(body) });
      if (op === "GET") await drained(res.body);
      else await res.body?.cancel();
    },
    handler: async (i) => {
      const path = signed.path.replace(key(0), key(i));
      const request = { ...signed, path, headers: { ...signed.headers } } as HttpRequest;
      const { response } = await handler.handle(request);
      if (op === "GET") await drained(response.body);
      else if (response.body instanceof ReadableStream) await response.body.cancel();
    },
    client: async (i) => {
      if (op === "PUT") await putObject(client, BUCKET, key(i), body);
      else await drainBody(await getObject(client, BUCKET, key(i)));
    },
  };
}

/**
 * Each layer's median CPU per request (the range of its rounds) and, after
 * the first, what it adds to the layer before it.
 *
 * @example
 * ```ts
 * import { layerLine } from "./s3_sdk_cpu.ts";
 * const line = layerLine({ fetch: [300, 310], handler: [340, 350] });
 * console.assert(line === "fetch 305 (300–310)\thandler 345 (340–350) +40");
 * ```
 */
export function layerLine(us: Record<string, number[]>): string {
  let before: number | undefined;
  return Object.entries(us).map(([name, v]) => {
    const m = median(v);
    const added = before === undefined
      ? ""
      : ` ${m >= before ? "+" : "−"}${Math.abs(m - before).toFixed(0)}`;
    before = m;
    const range = `${Math.min(...v).toFixed(0)}–${Math.max(...v).toFixed(0)}`;
    return `${name} ${m.toFixed(0)} (${range})${added}`;
  }).join("\t");
}

/** Each shape's layers on the stub, `rounds` rounds of 3 s each, layers in turn. */
function layers(rounds: number, only: string | undefined): Promise<void> {
  return eachShapeOnStub(
    "layers",
    only,
    async ({ client, endpoint, shape: s, label, body, key }) => {
      const ways = await layersOf(client, endpoint, s.op, key, body);
      const us: Record<string, number[]> = {};
      for (let r = 0; r < rounds; r++) {
        for (const [name, one] of Object.entries(ways)) {
          await loops(s.depth, 300, one);
          const c0 = cpu();
          const n = await loops(s.depth, 3000, one);
          (us[name] ??= []).push((cpu() - c0) / n);
        }
      }
      console.log(`${label} ×${s.depth}\t${layerLine(us)} µs CPU/req, median (range) of ${rounds}`);
    },
  );
}

if (import.meta.main) {
  if (!Deno.env.get("AWS_ACCESS_KEY_ID")) {
    // The stub ignores signatures, but the SDK signs every request.
    Deno.env.set("AWS_ACCESS_KEY_ID", "TIERBENCHSTUBKEY");
    Deno.env.set("AWS_SECRET_ACCESS_KEY", "tierbench-stub-secret");
  }
  if (Deno.args[0] === "--no-network") await noNetwork();
  else if (Deno.args[0] === "--layers") {
    const rounds = Number(Deno.args[1] ?? "3");
    if (!Number.isInteger(rounds) || rounds < 1) {
      console.error(
        `s3_sdk_cpu: --layers "${Deno.args[1]}": the rounds must be a positive integer`,
      );
      Deno.exit(2);
    }
    await layers(rounds, Deno.args[2]);
  } else await onStub(Number(Deno.args[0] ?? "2"), Deno.args[1]);
}
