/**
 * What the s3 tier, its engine and `tierbench clean` share: where the server
 * is, a client configured for S3-compatible servers (path-style addressing,
 * checksums only where required, Uint8Array bodies, Deno's native fetch
 * under the SDK's signing and retries), and one-line errors
 * that name the operation and object but never a credential.
 *
 * @module
 */

import { S3Client } from "@aws-sdk/client-s3";
import { userAgentMiddleware } from "@aws-sdk/core/client";
import { buildQueryString, HttpRequest as SdkRequest, HttpResponse } from "@smithy/core/protocols";
import { StandardRetryStrategy } from "@smithy/core/retry";
import type {
  HttpHandlerOptions,
  HttpRequest,
  RequestHandler,
  RetryErrorInfo,
  RetryStrategyV2,
  StandardRetryToken,
} from "@smithy/types";
import type { RetryCause } from "../core/job_protocol.ts";
import { Deadlines } from "../core/deadlines.ts";
import { ConfigError, S3Error } from "../core/errors.ts";
import { redactSecrets, registerSecret, withoutUserInfo } from "../core/secrets.ts";
import {
  fixedEndpoint,
  leanErrorCheck,
  leanSerde,
  memoizeContentType,
  reuseAuthScheme,
} from "./_s3_lean_middleware.ts";
import { Sha256 } from "./_s3_sha256.ts";

/** Environment variables that name the endpoint, in order of precedence. */
export const ENDPOINT_ENV_VARS = [
  "TIERBENCH_S3_ENDPOINT",
  "AWS_ENDPOINT_URL_S3",
  "AWS_ENDPOINT_URL",
] as const;

/** The region when neither `--region` nor `AWS_REGION` names one. */
export const DEFAULT_REGION = "us-east-1";

/** Requests the SDK makes for one operation, retries of transient errors included. */
export const MAX_ATTEMPTS = 4;

/**
 * How long a request may see no progress (no bytes either way) before it is
 * abandoned as a TimeoutError (and retried): a stalled server, such as a full
 * Ceph cluster, then fails the run instead of hanging it.
 */
export const REQUEST_IDLE_TIMEOUT_MS = 30_000;

/**
 * How long one attempt may see no progress before the SDK abandons and
 * retries it: a share of --timeout (which bounds a request with its
 * retries), so a stalled server is retried in time; at least 1 s.
 *
 * @example
 * ```ts
 * import { idleTimeoutOf } from "./s3_client.ts";
 * console.assert(idleTimeoutOf(30_000) === 7_500 && idleTimeoutOf(2_000) === 1_000);
 * ```
 */
export function idleTimeoutOf(timeoutMs: number): number {
  return Math.max(1000, Math.min(REQUEST_IDLE_TIMEOUT_MS, Math.floor(timeoutMs / MAX_ATTEMPTS)));
}

/** Where an S3 server is and how to sign for it. */
export interface S3Location {
  /** Endpoint URL; undefined means AWS itself. */
  readonly endpoint: string | undefined;
  readonly region: string;
}

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The endpoint: the option, else the first of {@linkcode ENDPOINT_ENV_VARS}
 * that is set, else undefined (AWS); without user information, which S3
 * does not use (requests are signed with the AWS credentials).
 *
 * @throws {ConfigError} when the URL is not http(s).
 *
 * @example
 * ```ts
 * import { resolveEndpoint } from "./s3_client.ts";
 * console.assert(resolveEndpoint("http://127.0.0.1:7480") === "http://127.0.0.1:7480");
 * ```
 */
export function resolveEndpoint(option?: string): string | undefined {
  const value = option ?? ENDPOINT_ENV_VARS.map(env).find((v) => v !== undefined);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("endpoint", `"${redactSecrets(value)}" is not a URL`, "http://HOST:PORT");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError("endpoint", `${url.protocol} is not supported`, "http:, https:");
  }
  return withoutUserInfo(value).replace(/\/+$/, "");
}

/** The region: the option, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else us-east-1. */
export function resolveRegion(option?: string): string {
  return option ?? env("AWS_REGION") ?? env("AWS_DEFAULT_REGION") ?? DEFAULT_REGION;
}

/** The endpoint as results and messages show it: no user information, never a credential. */
export function endpointLabel(loc: S3Location): string {
  if (loc.endpoint === undefined) return `https://s3.${loc.region}.amazonaws.com`;
  return redactSecrets(loc.endpoint);
}

/**
 * `BUCKET/PREFIX` (from `--tier s3://BUCKET/PREFIX`) as a bucket and a key
 * prefix without slashes at either end (`""` for the bucket's root).
 *
 * @example
 * ```ts
 * import { splitBucketPath } from "./s3_client.ts";
 * const { bucket, prefix } = splitBucketPath("data/runs/a/");
 * console.assert(bucket === "data" && prefix === "runs/a");
 * ```
 */
export function splitBucketPath(path: string): { bucket: string; prefix: string } {
  const slash = path.indexOf("/");
  if (slash < 0) return { bucket: path, prefix: "" };
  return { bucket: path.slice(0, slash), prefix: path.slice(slash + 1).replace(/^\/+|\/+$/g, "") };
}

/**
 * How the SDK's requests travel: `fetch`, Deno's native HTTP client under
 * the SDK's signing and retries (the default: bodies go to and from Rust
 * without node:http's streams, PUT bodies without a copy, and no
 * `Expect: 100-continue` per PUT); `node`, the SDK's default
 * NodeHttpHandler on Deno's node:http.
 */
export type S3HttpHandler = "fetch" | "node";

/** The variable that picks the handler for every client (`fetch` when unset). */
export const HANDLER_ENV_VAR = "TIERBENCH_S3_HTTP";

/**
 * The handler named by {@linkcode HANDLER_ENV_VAR}, `fetch` when unset.
 *
 * @throws {ConfigError} naming the variable when it holds anything else.
 */
export function handlerFromEnv(): S3HttpHandler {
  const v = env(HANDLER_ENV_VAR);
  if (v === undefined || v === "fetch" || v === "node") return v ?? "fetch";
  throw new ConfigError("tier", `${HANDLER_ENV_VAR}="${v}" is neither fetch nor node`);
}

/** Options of {@linkcode newS3Client}. */
export interface S3ClientOptions {
  /** Connections the client may open at once (default 50, the SDK's; node handler only). */
  readonly maxSockets?: number;
  /** Requests per operation, retries included (default {@linkcode MAX_ATTEMPTS}). */
  readonly maxAttempts?: number;
  /** The HTTP handler (default: {@linkcode handlerFromEnv}). */
  readonly handler?: S3HttpHandler;
  /**
   * How long a request may see no progress before it is abandoned and
   * retried, ms (default {@linkcode REQUEST_IDLE_TIMEOUT_MS}); one whose
   * answer has not begun within twice this is abandoned and retried too.
   */
  readonly idleTimeoutMs?: number;
  /** Told of each retry the SDK makes, with its cause, before it backs off and retries. */
  readonly onRetry?: (cause: RetryCause) => void;
}

/**
 * What Deno's HTTP client says of a failed connection, and the errno name
 * node:http would have given it: the SDK retries these by that name.
 */
const NETWORK_FAILURES: readonly [RegExp, string][] = [
  [/connection refused/i, "ECONNREFUSED"],
  [
    /connection reset|connection closed before|incomplete ?message|unexpected eof|error reading a body/i,
    "ECONNRESET",
  ],
  [/broken pipe/i, "EPIPE"],
  [/timed out/i, "ETIMEDOUT"],
  [/no route to host/i, "EHOSTUNREACH"],
  [/network is unreachable/i, "ENETUNREACH"],
  [/dns error|failed to lookup address|name or service not known/i, "ENOTFOUND"],
];

/**
 * A network failure of Deno's fetch (a TypeError "fetch failed" whose cause
 * says what happened, or an error reading a body) as node:http reports it:
 * an Error with the errno name as its `code`, the original as its cause, so
 * that the SDK's retry strategy and {@linkcode isTransient} know it. Any
 * other error is returned as it is.
 *
 * @example
 * ```ts
 * import { networkError } from "./s3_client.ts";
 * const e = new TypeError("fetch failed", {
 *   cause: new Error("tcp connect error: Connection refused (os error 111)"),
 * });
 * console.assert((networkError(e) as { code?: string }).code === "ECONNREFUSED");
 * ```
 */
export function networkError(e: unknown): unknown {
  if (!(e instanceof Error) || "code" in e) return e;
  const text = `${e.message} ${e.cause instanceof Error ? e.cause.message : String(e.cause ?? "")}`;
  const code = NETWORK_FAILURES.find(([re]) => re.test(text))?.[1];
  if (code === undefined) return e;
  const mapped = new Error(`${code}: ${text.replace(/^fetch failed /, "").trim()}`, { cause: e });
  return Object.assign(mapped, { code });
}

/** An Error named `name` (the SDK and {@linkcode isTransient} read errors by name). */
function namedError(name: string, message: string, cause?: unknown): Error {
  const e = new Error(message, cause === undefined ? {} : { cause });
  e.name = name;
  return e;
}

/**
 * The SDK's requests over Deno's fetch, as the SDK's FetchHttpHandler sends
 * them but with less work per request: the SDK's header record goes to fetch
 * as it is (no Headers and Request built first and copied again), and the
 * wait for the answer's headers is a deadline that aborts the fetch (the
 * SDK's handler races a promise and leaves the request running), kept with
 * the others of the handler by one timer. A request
 * whose answer has not begun within `timeoutMs` fails with a TimeoutError,
 * the caller's abort signal with an AbortError (it aborts the body too), a
 * network failure as node:http names it; the SDK retries each as before.
 */
class DenoFetchHandler implements RequestHandler<HttpRequest, HttpResponse, HttpHandlerOptions> {
  readonly #timeoutMs: number;
  readonly #deadlines = new Map<number, Deadlines>();

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  async handle(
    request: HttpRequest,
    { abortSignal, requestTimeout }: HttpHandlerOptions = {},
  ): Promise<{ response: HttpResponse }> {
    const signal = abortSignal as AbortSignal | undefined;
    if (signal?.aborted) throw abortError(signal);
    const ms = requestTimeout ?? this.#timeoutMs;
    const ctl = new AbortController();
    let timedOut = false;
    const deadlines = ms > 0 ? this.#deadlinesOf(ms) : undefined;
    const deadline = deadlines?.add(() => {
      timedOut = true;
      ctl.abort();
    });
    const query = buildQueryString(request.query ?? {});
    const port = request.port ? `:${request.port}` : "";
    const url = `${request.protocol}//${request.hostname}${port}${request.path}` +
      (query ? `?${query}` : "");
    const body = request.method === "GET" || request.method === "HEAD" ? undefined : request.body;
    try {
      const res = await fetch(url, {
        method: request.method,
        headers: request.headers,
        body: fetchBody(body),
        // the caller's signal aborts the body too; the timer only the wait for the headers
        signal: signal ? AbortSignal.any([signal, ctl.signal]) : ctl.signal,
      });
      // forEach, not for-of: Deno's iterator fetches its sorted, joined list anew for each
      // header it yields, forEach once (a fetch answer of 16 headers: 4.6 against 6.4 µs).
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => {
        headers[k] = v;
      });
      return {
        response: new HttpResponse({
          statusCode: res.status,
          reason: res.statusText,
          headers,
          body: await bodyOf(request.method, res),
        }),
      };
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      if (timedOut) {
        throw namedError("TimeoutError", `Request did not complete within ${ms} ms`, e);
      }
      throw networkError(e);
    } finally {
      if (deadline !== undefined) deadlines!.remove(deadline);
    }
  }

  /** The deadlines of requests that wait `ms` for their answer. */
  #deadlinesOf(ms: number): Deadlines {
    let d = this.#deadlines.get(ms);
    if (d === undefined) this.#deadlines.set(ms, d = new Deadlines(ms));
    return d;
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): { requestTimeout?: number } {
    return { requestTimeout: this.#timeoutMs };
  }

  destroy(): void {}
}

/**
 * Bytes as a Blob that fetch sends as they are: its stream hands fetch the
 * bytes themselves, in one chunk, and fetch sends a Blob's size as the
 * request's Content-Length. Given the bytes (a Uint8Array), Deno's fetch
 * copies them twice before they leave (into a new ArrayBuffer, then into
 * its HTTP client's buffer): about 200 µs of CPU for a 1 MiB PUT, as much as
 * the SDK's own work. The bytes are read while the request is under way, so
 * they must not change until it has ended (the engines' PUT bodies never
 * do). Deno's fetch reads a Blob through its `size` and `stream()`; the
 * client's tests check that the bytes arrive whole, with their length.
 */
class BytesBlob extends Blob {
  readonly #bytes: Uint8Array<ArrayBuffer>;

  constructor(bytes: Uint8Array<ArrayBuffer>) {
    super();
    this.#bytes = bytes;
  }

  override get size(): number {
    return this.#bytes.byteLength;
  }

  override stream(): ReadableStream<Uint8Array<ArrayBuffer>> {
    const bytes = this.#bytes;
    return new ReadableStream({
      start(c) {
        c.enqueue(bytes);
        c.close();
      },
    });
  }
}

/**
 * A request body as fetch is to be given it: bytes (a Uint8Array, not
 * empty) as a {@linkcode BytesBlob}, sent without a copy and with their
 * length; anything else (text, a stream, nothing) as it is.
 *
 * @example
 * ```ts
 * import { fetchBody } from "./s3_client.ts";
 * const body = fetchBody(new Uint8Array(1024)) as Blob;
 * console.assert(body instanceof Blob && body.size === 1024);
 * console.assert(fetchBody("text") === "text" && fetchBody(undefined) === null);
 * ```
 */
export function fetchBody(body: unknown): BodyInit | null {
  if (body instanceof Uint8Array && body.byteLength > 0 && body.buffer instanceof ArrayBuffer) {
    return new BytesBlob(body as Uint8Array<ArrayBuffer>);
  }
  return (body ?? null) as BodyInit | null;
}

/** The body of every answer that says it has none. */
const NO_BYTES = new Uint8Array(0);

/**
 * What the SDK is given as an answer's body: its stream, except for an
 * answer other than a GET's that says it has no bytes (a PUT's, a DELETE's),
 * which comes as empty bytes, its stream cancelled: the SDK reads every
 * answer's body of a PUT to its end before it parses it, and a stream read
 * through Deno's fetch costs several reads, a promise each, per request.
 */
async function bodyOf(method: string, res: Response): Promise<ReadableStream | Blob | Uint8Array> {
  if (res.body === null) return await res.blob();
  if (method === "GET" || res.headers.get("content-length") !== "0") return res.body;
  await res.body.cancel();
  return NO_BYTES;
}

/** What the SDK's own handler throws for an aborted request. */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return namedError("AbortError", "Request aborted", reason);
  return namedError("AbortError", reason === undefined ? "Request aborted" : String(reason));
}

/** The SDK's request handler for `handler`. */
function requestHandler(handler: S3HttpHandler, maxSockets: number, idleMs: number) {
  if (handler === "fetch") {
    // Its timeout runs until the response's headers; bodies have their own (drainBody).
    return new DenoFetchHandler(idleMs);
  }
  return {
    // no progress (no bytes either way, before or during the answer) for this long: a
    // TimeoutError, which the SDK retries
    socketTimeout: idleMs,
    // and no answer begun within twice that: when a kept-alive connection is reset before
    // the answer, Deno's node:http sends the request again on a new one by itself, and the
    // socket timeout stays behind on the old connection; a stall there would otherwise
    // hold the request until --timeout instead of being retried
    requestTimeout: 2 * idleMs,
    throwOnRequestTimeout: true,
    httpAgent: { keepAlive: true, maxSockets },
    httpsAgent: { keepAlive: true, maxSockets },
  };
}

/**
 * The SDK's standard retry strategy (exponential backoff with jitter, a
 * longer base for throttling, a retry quota), telling `onRetry` of each
 * retry it grants and why. Counting here, where the SDK decides to retry,
 * holds whatever sends the requests (the HTTP handler).
 */
class CountingRetryStrategy implements RetryStrategyV2 {
  readonly mode = "standard";
  readonly #inner: StandardRetryStrategy;
  readonly #onRetry: (cause: RetryCause) => void;

  constructor(maxAttempts: number, onRetry: (cause: RetryCause) => void) {
    this.#inner = new StandardRetryStrategy(maxAttempts);
    this.#onRetry = onRetry;
  }

  acquireInitialRetryToken(scope: string): Promise<StandardRetryToken> {
    return this.#inner.acquireInitialRetryToken(scope);
  }

  async refreshRetryTokenForRetry(
    token: StandardRetryToken,
    info: RetryErrorInfo,
  ): Promise<StandardRetryToken> {
    const next = await this.#inner.refreshRetryTokenForRetry(token, info);
    this.#onRetry(retryCauseOf(info.error));
    return next;
  }

  recordSuccess(token: StandardRetryToken): void {
    this.#inner.recordSuccess(token);
  }
}

/**
 * A client for an S3-compatible server. Credentials come from the SDK's
 * default chain (environment, shared profile files, …); none is ever passed
 * or printed here.
 *
 * @example
 * ```ts ignore
 * const client = newS3Client({ endpoint: "http://127.0.0.1:7480", region: "us-east-1" });
 * try { … } finally { client.destroy(); }
 * ```
 */
export function newS3Client(loc: S3Location, options: S3ClientOptions = {}): S3Client {
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  const idleMs = options.idleTimeoutMs ?? REQUEST_IDLE_TIMEOUT_MS;
  const handler = options.handler ?? handlerFromEnv();
  const client = new S3Client({
    region: loc.region,
    ...(loc.endpoint === undefined ? {} : { endpoint: loc.endpoint }),
    forcePathStyle: true,
    // Since SDK 3.729 the default sends stream bodies aws-chunked with a checksum trailer,
    // which S3-compatible servers such as Ceph RGW reject; integrity is not what is measured.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts,
    ...(options.onRetry
      ? { retryStrategy: new CountingRetryStrategy(maxAttempts, options.onRetry) }
      : {}),
    requestHandler: requestHandler(handler, options.maxSockets ?? 50, idleMs),
    // The SDK asks for `Expect: 100-continue` on PUTs of 2 MiB and more unless its handler is
    // its own FetchHttpHandler: fetch never waits for the server's 100 Continue, so the header
    // would only make the server send one; node:http waits, and keeps it.
    ...(handler === "fetch" ? { expectContinueHeader: false } : {}),
    // The SDK resolves each command's middleware stack once instead of on every send.
    cacheMiddleware: true,
    // The signer's hashes and HMACs, the same bytes with less work per request.
    sha256: Sha256,
  });
  memoizeSigner(client);
  trimMiddleware(client);
  leanSerde(client);
  reuseAuthScheme(client);
  leanErrorCheck(client);
  memoizeContentType(client);
  if (loc.endpoint !== undefined) fixedEndpoint(client, pathStyle(loc.endpoint));
  // Every PUT's body (PutObject, UploadPart) goes UNSIGNED-PAYLOAD: the SDK still signs
  // the request but no longer hashes the body. SHA-256 of every byte uploaded runs at
  // about 1 GB/s a core, a ceiling of the client, not of the storage; S3 and RGW accept
  // it, and the body's integrity is not what is measured.
  client.middlewareStack.add(
    (next) => (args) => {
      const r = args.request as { method?: string; headers?: Record<string, string> };
      if (r.method === "PUT" && r.headers !== undefined) {
        r.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
      }
      return next(args);
    },
    { step: "build", name: "tierbenchUnsignedPayload" },
  );
  return client;
}

/**
 * The endpoint of every request to a server at `endpoint`, path-style:
 * `endpoint/bucket`, as the SDK's own rules resolve it for a custom endpoint
 * with forcePathStyle, without running those rules (an S3 rule set of some
 * thousand lines) on every request. Each bucket's is made once: no
 * middleware this client keeps changes an endpoint it is given (only the
 * SDK's bucketEndpoint option, which this client leaves off, would).
 *
 * @throws {Error} for an ARN as the bucket, as the SDK's rules do for path-style addressing.
 */
function pathStyle(endpoint: string): (bucket: string | undefined) => { url: URL } {
  const base = endpoint.replace(/\/+$/, "");
  const endpoints = new Map<string, { url: URL }>();
  return (name) => {
    const bucket = name ?? "";
    let known = endpoints.get(bucket);
    if (known === undefined) {
      if (bucket.startsWith("arn:")) {
        throw new Error("Path-style addressing cannot be used with ARN buckets");
      }
      const url = new URL(bucket === "" ? base : `${base}/${encodeURIComponent(bucket)}`);
      known = { url };
      endpoints.set(bucket, known);
    }
    return known;
  };
}

/**
 * Takes out of the client's middleware the steps that do nothing for an
 * S3-compatible server reached at a fixed endpoint, yet cost CPU on every
 * request; each stays in the SDK, unused. What the server receives changes
 * only in headers that mean nothing to S3: the User-Agent loses the SDK's
 * per-request feature list (`m/…`), and inside AWS Lambda no trace headers
 * (`X-Amzn-Trace-Id`, `traceparent`) would be sent. Signing, retries,
 * Content-Length, Host, Expect, bucket-name checks, serialization and the
 * check of 200 answers that carry an error all stay.
 */
function trimMiddleware(client: S3Client): void {
  const stack = client.middlewareStack;
  // Logs nothing (the client has no logger) but still walks the operation's input and
  // output schemas per request to hide sensitive members from the log it does not write.
  stack.remove("loggerMiddleware");
  // Acts only inside AWS Lambda (trace headers from its environment), yet reads the
  // environment per request.
  stack.remove("recursionDetectionMiddleware");
  // Follows a 301 to a bucket's region only with followRegionRedirects, which this client
  // leaves off (a fixed endpoint has no other region to go to); it still reads the region
  // twice per request.
  stack.removeByTag("REGION_REDIRECT");
  // S3 Express One Zone directory buckets: only an endpoint of AWS's rules says a bucket
  // is one; a custom endpoint (pathStyle) never does, and AWS keeps its default rules.
  if (client.config.isCustomEndpoint) stack.remove("s3ExpressMiddleware");
  // The User-Agent, built once by the SDK's own middleware instead of per request with a
  // list of the SDK features the request used.
  stack.remove("getUserAgentMiddleware");
  const userAgent = userAgentOnce(client);
  let known: UserAgent | undefined;
  const set = (headers: Record<string, string>, v: UserAgent) => {
    headers["user-agent"] = v.ua;
    if (v.amz !== "") headers["x-amz-user-agent"] = v.amz;
  };
  stack.add((next) => (args) => {
    const headers = (args.request as { headers?: Record<string, string> }).headers;
    if (headers === undefined) return next(args);
    if (known !== undefined) {
      set(headers, known);
      return next(args);
    }
    return userAgent().then((v) => {
      set(headers, known = v);
      return next(args);
    });
  }, { step: "build", priority: "low", name: "tierbenchUserAgent" });
}

/** The User-Agent and X-Amz-User-Agent headers' values. */
interface UserAgent {
  readonly ua: string;
  readonly amz: string;
}

/**
 * The SDK's User-Agent and X-Amz-User-Agent as the SDK's own middleware
 * writes them, without its per-request feature list (`m/…`): that
 * middleware, run once on an empty request.
 */
function userAgentOnce(client: S3Client): () => Promise<UserAgent> {
  let values: Promise<UserAgent> | undefined;
  const make = async (): Promise<UserAgent> => {
    const request = new SdkRequest({});
    const done = () => Promise.resolve({ output: {}, response: {} });
    const options = client.config as unknown as Parameters<typeof userAgentMiddleware>[0];
    await userAgentMiddleware(options)(done as never, {})({ input: {}, request });
    const headers = request.headers as Record<string, string | undefined>;
    return {
      ua: (headers["user-agent"] ?? "").replace(/ m\/\S*/, ""),
      amz: headers["x-amz-user-agent"] ?? "",
    };
  };
  return () => (values ??= make());
}

/**
 * Makes the client's request signer once per auth scheme: the SDK's
 * provider, given no signer, builds a new one for every request (copying the
 * whole client configuration), and a new signer derives its signing key
 * again (four HMACs). The credentials stay a provider the signer calls on
 * every request, so that they may still rotate.
 */
function memoizeSigner(client: S3Client): void {
  const config = client.config as { signer?: (scheme?: unknown) => Promise<unknown> };
  const make = config.signer;
  if (make === undefined) return;
  const signers = new Map<string, Promise<unknown>>();
  config.signer = (scheme) => {
    const key = scheme === undefined ? "" : JSON.stringify(scheme);
    let signer = signers.get(key);
    if (signer === undefined) {
      signer = make(scheme).then((s) => (memoizeSigningKey(s), s));
      signers.set(key, signer);
      signer.catch(() => signers.delete(key));
    }
    return signer;
  };
}

/** The part of the SDK's SigV4 signer whose result depends only on its arguments. */
interface SigningKeyDeriver {
  getSigningKey(
    credentials: object,
    region: string,
    shortDate: string,
    service?: string,
  ): Promise<Uint8Array>;
}

/**
 * Keeps the signer's signing key for each credentials object and scope: the
 * SDK caches the key too, but finds it under an HMAC of the credentials that
 * it computes on every request (a tenth of the CPU the SDK spends signing a
 * PUT). New credentials (rotated, refreshed) are a new object and derive
 * their own key; so does each new day.
 */
function memoizeSigningKey(signer: unknown): void {
  const v4 = (signer as { sigv4Signer?: Partial<SigningKeyDeriver> } | undefined)?.sigv4Signer ??
    (signer as Partial<SigningKeyDeriver> | undefined);
  const derive = v4?.getSigningKey;
  if (v4 === undefined || typeof derive !== "function") return;
  const keys = new WeakMap<object, { scope: string; key: Promise<Uint8Array> }>();
  v4.getSigningKey = (credentials, region, shortDate, service) => {
    const scope = `${shortDate}/${region}/${service ?? ""}`;
    const known = keys.get(credentials);
    if (known?.scope === scope) return known.key;
    const key = derive.call(v4, credentials, region, shortDate, service);
    keys.set(credentials, { scope, key });
    key.catch(() => keys.delete(credentials));
    return key;
  };
}

/**
 * Resolves the client's credentials once, so that a missing one fails early
 * with a clear message, and registers them for redaction wherever they came
 * from (environment or profile file).
 *
 * @throws {ConfigError} when no credentials can be found.
 */
export async function resolveCredentials(client: S3Client): Promise<void> {
  try {
    const c = await client.config.credentials();
    registerSecret(c.accessKeyId);
    registerSecret(c.secretAccessKey);
    registerSecret(c.sessionToken);
  } catch (e) {
    throw new ConfigError(
      "tier",
      "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
      undefined,
      { cause: e },
    );
  }
}

/** The parts of an SDK or network error that tierbench reads. */
interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: number; attempts?: number };
}

/** The HTTP status of a failed request, when a response came. */
export function statusOf(e: unknown): number | undefined {
  return (e as ErrorShape | undefined)?.$metadata?.httpStatusCode;
}

/** Requests made for an operation that ended in `result` (a response or an error). */
export function attemptsOf(result: unknown): number {
  const n = (result as ErrorShape | undefined)?.$metadata?.attempts;
  return typeof n === "number" && n > 0 ? n : 1;
}

/** The S3 error code, or the network error code, of a failure. */
export function codeOf(e: unknown): string {
  const s = e as ErrorShape | undefined;
  const status = statusOf(e);
  if (typeof s?.code === "string" && s.code !== "") return s.code;
  const name = typeof s?.name === "string" ? s.name : "";
  // Bodiless responses (HEAD) leave the SDK without a code: name it from the status.
  if (
    (name === "" || name === "Unknown" || name === "UnknownError" || name === "Error") && status
  ) {
    return status === 403 ? "AccessDenied" : status === 404 ? "NotFound" : `HTTP${status}`;
  }
  return name || "Error";
}

/** Network failures worth a retry when they happen while a body streams. */
const TRANSIENT_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ECONNREFUSED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "TimeoutError",
  "RequestTimeout",
  "SlowDown",
  "InternalError",
  "ServiceUnavailable",
]);

/** How node:http, and Deno's fetch, word a connection dropped or a body cut off. */
const TRANSIENT_WORDS = new RegExp(
  "premature close|aborted|socket hang up|connection (reset|closed)|" +
    "error reading a body|unexpected eof|incomplete ?message",
  "i",
);

/**
 * Whether a failure is transient: a 5xx, throttling, or a dropped or refused
 * connection. The SDK retries these itself for whole requests; the engine
 * retries them when a response body breaks off.
 */
export function isTransient(e: unknown): boolean {
  const status = statusOf(e);
  if (status !== undefined && (status >= 500 || status === 429)) return true;
  const code = codeOf(e);
  if (TRANSIENT_CODES.has(code)) return true;
  const message = String((e as ErrorShape | undefined)?.message ?? "");
  return TRANSIENT_WORDS.test(message);
}

/** S3 codes of throttling, whatever the status. */
const THROTTLING_CODES = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "ThrottledException",
  "RequestLimitExceeded",
  "TooManyRequestsException",
  "RequestThrottled",
  "RequestThrottledException",
]);

/** Codes of a request that saw no progress for its idle timeout. */
const TIMEOUT_CODES = new Set(["TimeoutError", "RequestTimeout", "ETIMEDOUT"]);

/**
 * Why a failed request is retried, as a job counts it: throttled (503
 * SlowDown, 429), server_error (another 5xx), timeout (no progress for the
 * idle timeout), connection (refused, reset, dropped mid-body), other.
 *
 * @example
 * ```ts
 * import { retryCauseOf } from "./s3_client.ts";
 * const slowDown = { name: "SlowDown", $metadata: { httpStatusCode: 503 } };
 * console.assert(retryCauseOf(slowDown) === "throttled");
 * console.assert(retryCauseOf(Object.assign(new Error("x"), { code: "ECONNRESET" })) === "connection");
 * ```
 */
export function retryCauseOf(e: unknown): RetryCause {
  const status = statusOf(e);
  const code = codeOf(e);
  if (status === 429 || THROTTLING_CODES.has(code)) return "throttled";
  if (status !== undefined && status >= 500) return status === 503 ? "throttled" : "server_error";
  if (TIMEOUT_CODES.has(code)) return "timeout";
  return isTransient(e) ? "connection" : "other";
}

/** Where a failed request was going. */
export interface RequestContext {
  readonly operation: string;
  readonly bucket: string;
  readonly key?: string;
  readonly loc: S3Location;
  /** Requests made in all, when the caller retried beyond the SDK. */
  readonly attempts?: number;
}

/**
 * Sends one request (with the SDK's retries) and abandons it after
 * `timeoutMs` when given: a server that stopped answering fails it as an
 * {@linkcode S3Error} "timed out after N s (--timeout)" instead of holding
 * the caller through every retry's idle timeout. Other failures become an
 * S3Error naming `ctx`.
 *
 * @example
 * ```ts ignore
 * const r = await sendWithin(client, 5000, { operation: "ListObjectsV2", bucket, loc },
 *   (o) => client.send(new ListObjectsV2Command({ Bucket: bucket }), o));
 * ```
 */
export async function sendWithin<T>(
  timeoutMs: number | undefined,
  ctx: RequestContext,
  send: (options: { abortSignal?: AbortSignal }) => Promise<T>,
): Promise<T> {
  const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  try {
    return await send(signal ? { abortSignal: signal } : {});
  } catch (e) {
    if (signal?.aborted) {
      throw new S3Error({
        operation: ctx.operation,
        bucket: ctx.bucket,
        key: ctx.key,
        code: "timed out",
        endpoint: endpointLabel(ctx.loc),
        detail: `after ${timeoutMs! / 1000} s (--timeout)`,
      }, { cause: e });
    }
    throw s3ErrorFrom(e, ctx);
  }
}

/**
 * A GET and the read of its answer's body, the GET sent again (up to
 * {@linkcode MAX_ATTEMPTS} in all, with backoff) when the body breaks off
 * with a transient error: the SDK retries a request only until its answer's
 * headers have come. `onRetry` is told of each such retry. What `send`
 * throws is thrown as it is; a body that keeps breaking off, as an
 * {@linkcode S3Error} naming `ctx`'s operation with "(body)" and the
 * attempts; an S3Error from `read` (its own deadline) is never retried.
 *
 * @example
 * ```ts ignore
 * const text = await withBodyRetries(
 *   { operation: "GetObject", bucket, key, loc },
 *   () => client.send(new GetObjectCommand({ Bucket: bucket, Key: key })),
 *   async (r) => await r.Body!.transformToString(),
 * );
 * ```
 */
export async function withBodyRetries<R, T>(
  ctx: RequestContext,
  send: () => Promise<R>,
  read: (answer: R) => Promise<T>,
  onRetry?: (cause: RetryCause) => void,
): Promise<T> {
  for (let attempt = 1;; attempt++) {
    const answer = await send();
    try {
      return await read(answer);
    } catch (e) {
      const again = !(e instanceof S3Error) && (e as ErrorShape).name !== "AbortError" &&
        isTransient(e);
      if (attempt < MAX_ATTEMPTS && again) {
        onRetry?.(retryCauseOf(e));
        await backoff(attempt);
        continue;
      }
      throw s3ErrorFrom(e, { ...ctx, operation: `${ctx.operation} (body)`, attempts: attempt });
    }
  }
}

/** Waits before GET `attempt` + 1: exponential with jitter, at most 2 s. */
function backoff(attempt: number): Promise<void> {
  const ms = Math.min(2000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2);
  return new Promise((r) => setTimeout(r, ms));
}

/** Turns an SDK or network error into an {@linkcode S3Error} (one line, no credentials). */
export function s3ErrorFrom(e: unknown, ctx: RequestContext): S3Error {
  if (e instanceof S3Error) return e;
  const code = codeOf(e);
  const status = statusOf(e);
  const generic = code === "Error" || code === "TypeError";
  const message = String((e as ErrorShape | undefined)?.message ?? e);
  return new S3Error({
    operation: ctx.operation,
    bucket: ctx.bucket,
    key: ctx.key,
    code,
    status,
    attempts: ctx.attempts ?? attemptsOf(e),
    endpoint: endpointLabel(ctx.loc),
    // The SDK's messages for coded errors add nothing ("UnknownError"); a bare Error's does.
    detail: generic ? `(${redactSecrets(message.split("\n")[0] ?? "")})` : undefined,
  }, { cause: e });
}
