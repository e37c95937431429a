/**
 * An S3 fault proxy: an HTTP proxy on loopback between an S3 client and an
 * S3 server (Ceph RGW, the stub of tools/services/s3_stub.ts) that fails a chosen
 * share of object requests the way S3 servers and networks do:
 *
 * - `slowdown`: `503 SlowDown` (throttling), the request body read first;
 * - `internal`: `500 InternalError`;
 * - `reset`: the connection dropped halfway through a body — a PUT's after
 *   half its bytes arrived (never forwarded), a GET's after half the answer;
 * - `slow`: the answer trickled out at `slowBytesPerSec` (headers at once);
 * - `stall`: the request read and then no answer for `stallMs`, then the
 *   connection dropped (a client gives up first, at its idle timeout).
 *
 * Everything else (by default bucket requests: HEAD, listings, multi-object
 * deletes; methods and keys the rule leaves out) is passed through
 * untouched, bytes and headers as they are, so signatures still hold. Which request meets a
 * fault is drawn from a seeded generator: a run is repeatable.
 *
 * ```sh
 * deno run -A tools/services/s3_fault_proxy.ts --upstream http://127.0.0.1:7480 --slowdown 0.1 --reset 0.05
 * # listening on http://127.0.0.1:PORT; point --endpoint there
 * ```
 *
 * @module
 */

import http from "node:http";
import { listenOnLoopback } from "../../core/loopback_server.ts";

/** The faults the proxy injects. */
export const FAULT_KINDS = ["slowdown", "internal", "reset", "slow", "stall"] as const;
/** One of {@linkcode FAULT_KINDS}. */
export type FaultKind = typeof FAULT_KINDS[number];

/** Options of {@linkcode startFaultProxy}. */
export interface FaultProxyOptions {
  /** The S3 server, `http://HOST:PORT`. */
  readonly upstream: string;
  /** The share of matching requests that meet each fault, 0 to 1 (they add up to at most 1). */
  readonly rates: Partial<Record<FaultKind, number>>;
  /** Methods of the requests that may meet a fault (default GET and PUT). */
  readonly methods?: readonly string[];
  /**
   * Which requests may meet a fault: those of objects (the default), those
   * of buckets (listings, multi-object deletes, HEAD), or all.
   */
  readonly scope?: "objects" | "buckets" | "all";
  /** Object keys (`bucket/key`) that may meet a fault (default: every object). */
  readonly keys?: RegExp;
  /** Seed of the draws (default 1). */
  readonly seed?: number;
  /** How long a `stall` holds a request before dropping it, ms (default 60 000). */
  readonly stallMs?: number;
  /** The pace of a `slow` answer, bytes/s (default 4 MiB/s). */
  readonly slowBytesPerSec?: number;
  /**
   * The most faults one request meets in a row: its next try (the same
   * method, path, query and range) passes (default: no limit). With fewer
   * than the client's attempts, every fault can be survived by retrying.
   */
  readonly maxFaultsInARow?: number;
}

/** A running proxy. */
export interface FaultProxy extends AsyncDisposable {
  /** `http://127.0.0.1:PORT`: the endpoint to give the client. */
  readonly endpoint: string;
  /** Faults injected so far, by kind. */
  readonly injected: Readonly<Record<FaultKind, number>>;
  /** Requests seen so far, faulted or not. */
  readonly requests: number;
  /** Changes the rates from now on (0 for all: pass everything through). */
  setRates(rates: Partial<Record<FaultKind, number>>): void;
}

/** xorshift32: the proxy's repeatable draws. */
function generator(seed: number): () => number {
  let x = (seed >>> 0) || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** The S3 error document of a refused request. */
function errorBody(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
    `<Message>${message}</Message></Error>`;
}

function refuse(res: http.ServerResponse, status: number, code: string, message: string): void {
  const body = errorBody(code, message);
  res.writeHead(status, {
    "content-type": "application/xml",
    "content-length": String(new TextEncoder().encode(body).byteLength),
  });
  res.end(body);
}

/** Reads a request body to its end (bytes discarded). */
function drain(req: http.IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    req.on("data", () => {});
    req.on("end", () => resolve());
    req.on("error", () => resolve());
    req.on("close", () => resolve());
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Which request meets which fault: the rule of the options, drawn in request order. */
class Picker {
  readonly #o: FaultProxyOptions;
  readonly #methods: Set<string>;
  readonly #draw: () => number;
  readonly #inARow = new Map<string, number>();
  rates: Partial<Record<FaultKind, number>>;

  constructor(o: FaultProxyOptions) {
    this.#o = o;
    this.#methods = new Set(o.methods ?? ["GET", "PUT"]);
    this.#draw = generator(o.seed ?? 1);
    this.rates = { ...o.rates };
  }

  /** The fault `req` meets, or undefined to pass it through. */
  pick(req: http.IncomingMessage): FaultKind | undefined {
    const path = decodeURIComponent((req.url ?? "/").split("?")[0]!.slice(1));
    const isObject = path.includes("/") && !path.endsWith("/");
    const scope = this.#o.scope ?? "objects";
    if (scope !== "all" && isObject !== (scope === "objects")) return undefined;
    if (!this.#methods.has(req.method ?? "") || (this.#o.keys && !this.#o.keys.test(path))) {
      return undefined;
    }
    const id = `${req.method} ${req.url} ${req.headers.range ?? ""}`;
    const r = this.#draw();
    let at = 0;
    for (const kind of FAULT_KINDS) {
      at += this.rates[kind] ?? 0;
      if (r >= at) continue;
      const n = this.#inARow.get(id) ?? 0;
      if (n >= (this.#o.maxFaultsInARow ?? Infinity)) break;
      // a slow answer is still an answer: it does not make the client try again
      if (kind !== "slow") this.#inARow.set(id, n + 1);
      return kind;
    }
    this.#inARow.delete(id);
    return undefined;
  }
}

/** Sends `req` on to the server as it came (headers as signed) and hands the answer to `body`. */
function forward(
  up: URL,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: (answer: http.IncomingMessage) => Promise<void> | void,
): void {
  const r = http.request({
    hostname: up.hostname,
    port: Number(up.port || 80),
    method: req.method,
    path: req.url,
    headers: req.headers,
  }, (answer) => void body(answer));
  r.on("error", () => res.destroy());
  req.pipe(r);
}

/** A PUT cut off after half its body (never forwarded); a GET's answer cut off halfway. */
function reset(up: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
  if (req.method === "PUT") {
    const length = Number(req.headers["content-length"] ?? 0);
    let got = 0;
    req.on("data", (chunk: Uint8Array) => {
      got += chunk.byteLength;
      if (got >= length / 2) req.socket.destroy();
    });
    if (length === 0) req.socket.destroy();
    return;
  }
  forward(up, req, res, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    const length = Number(answer.headers["content-length"] ?? 0);
    let sent = 0;
    answer.on("data", (chunk: Uint8Array) => {
      if (sent + chunk.byteLength >= length / 2) {
        answer.destroy();
        // dropped once the headers and the half are out: mid-body, never before the answer
        res.write(
          chunk.subarray(0, Math.max(0, Math.floor(length / 2) - sent)),
          () => res.socket?.destroy(),
        );
        return;
      }
      sent += chunk.byteLength;
      res.write(chunk);
    });
    answer.on("end", () => res.socket?.destroy());
  });
}

/** The answer trickled out at `bytesPerSec`, headers at once. */
function slow(up: URL, req: http.IncomingMessage, res: http.ServerResponse, bytesPerSec: number) {
  forward(up, req, res, async (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pause();
    const step = 16 * 1024;
    for await (const chunk of answer) {
      const bytes = chunk as Uint8Array;
      for (let at = 0; at < bytes.byteLength; at += step) {
        await sleep((Math.min(step, bytes.byteLength - at) / bytesPerSec) * 1000);
        if (res.destroyed) return;
        res.write(bytes.subarray(at, at + step));
      }
    }
    res.end();
  });
}

/**
 * Starts the proxy on a free loopback port.
 *
 * @example
 * ```ts ignore
 * await using proxy = await startFaultProxy({
 *   upstream: "http://127.0.0.1:7480",
 *   rates: { slowdown: 0.1, reset: 0.05 },
 * });
 * // run with --endpoint proxy.endpoint, then read proxy.injected
 * ```
 */
export async function startFaultProxy(o: FaultProxyOptions): Promise<FaultProxy> {
  const up = new URL(o.upstream);
  const picker = new Picker(o);
  const injected = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  let requests = 0;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const stall = (req: http.IncomingMessage, res: http.ServerResponse) =>
    void drain(req).then(() => {
      const t = setTimeout(() => {
        timers.delete(t);
        res.destroy();
      }, o.stallMs ?? 60_000);
      timers.add(t);
    });
  const server = http.createServer((req, res) => {
    requests++;
    const kind = picker.pick(req);
    if (kind !== undefined) injected[kind]++;
    if (kind === "slowdown") {
      void drain(req).then(() => refuse(res, 503, "SlowDown", "Please reduce your request rate."));
    } else if (kind === "internal") {
      void drain(req).then(() =>
        refuse(res, 500, "InternalError", "We encountered an internal error.")
      );
    } else if (kind === "stall") stall(req, res);
    else if (kind === "reset") reset(up, req, res);
    else if (kind === "slow") slow(up, req, res, o.slowBytesPerSec ?? 4 * 1024 * 1024);
    else {
      forward(up, req, res, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
    }
  });
  const listening = await listenOnLoopback(server);
  return {
    endpoint: listening.endpoint,
    injected,
    get requests() {
      return requests;
    },
    setRates(next) {
      picker.rates = { ...next };
    },
    async [Symbol.asyncDispose]() {
      for (const t of timers) clearTimeout(t);
      await listening.close();
    },
  };
}

if (import.meta.main) {
  const { parseArgs } = await import("node:util");
  const { values } = parseArgs({
    options: {
      upstream: { type: "string" },
      seed: { type: "string" },
      ...Object.fromEntries(FAULT_KINDS.map((k) => [k, { type: "string" as const }])),
    },
  });
  if (!values.upstream) {
    console.error(
      "usage: deno run -A tools/services/s3_fault_proxy.ts --upstream URL [--slowdown R] [--internal R] " +
        "[--reset R] [--slow R] [--stall R] [--seed N]",
    );
    Deno.exit(2);
  }
  const rates: Partial<Record<FaultKind, number>> = {};
  for (const k of FAULT_KINDS) {
    const v = (values as Record<string, string | undefined>)[k];
    if (v !== undefined) rates[k] = Number(v);
  }
  const proxy = await startFaultProxy({
    upstream: values.upstream,
    rates,
    ...(values.seed ? { seed: Number(values.seed) } : {}),
  });
  console.log(`listening on ${proxy.endpoint}`);
  Deno.addSignalListener("SIGINT", () => {
    console.log(JSON.stringify({ requests: proxy.requests, injected: proxy.injected }));
    Deno.exit(0);
  });
}
