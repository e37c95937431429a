/**
 * Helpers of the fault tests: the CLI run to its end with its output, a
 * file system that answers reads with EIO, and an S3 server that stops
 * answering.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { s3StubHandler } from "../tools/services/s3_stub.ts";
import { type CliResult, finished, sh, spawnCli, tempDirOnDisk } from "./_helpers.ts";
import { localServer } from "./_local_server.ts";

export { finished };

/** Spawns the CLI (main.ts) with extra environment variables. */
export function spawnCliWithEnv(args: string[], env: Record<string, string>): Deno.ChildProcess {
  return spawnCli(args, { env });
}

/** The last line of stderr is the run's one line: `tierbench: …`, exit 1, no stack trace. */
export function assertFailedLine(r: CliResult, pattern: RegExp): void {
  assert.equal(r.code, 1, `exit ${r.code}, stderr: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /^\s+at /m);
  const lines = r.stderr.trim().split("\n");
  assert.match(lines.at(-1)!, /^tierbench: /);
  assert.match(lines.at(-1)!, pattern);
}

/** Polls `ready` every 50 ms until it holds; throws (naming `what`) after `limitMs`. */
export async function waitUntil(
  what: string,
  ready: () => Promise<boolean> | boolean,
  limitMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!await ready()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether `path` exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * A btrfs file system (on a loop device over an image on the disk) holding
 * `data.bin`, whose second MiB was overwritten in the image behind btrfs's
 * back: reading it fails with EIO (a data checksum mismatch), as a bad
 * sector would. Root and mkfs.btrfs (btrfs-progs) only. Unmounted and
 * removed when disposed.
 */
export async function eioFile(): Promise<{ file: string; size: number } & AsyncDisposable> {
  const dir = await tempDirOnDisk();
  const image = join(dir, "disk.img");
  const mnt = join(dir, "mnt");
  const size = 4 * 1024 * 1024;
  let mounted = false;
  const dispose = async () => {
    if (mounted) await sh("umount", [mnt]);
    await Deno.remove(dir, { recursive: true });
  };
  try {
    await Deno.mkdir(mnt);
    await Deno.writeFile(image, new Uint8Array(0));
    await Deno.truncate(image, 200 * 1024 * 1024);
    const mk = await sh("mkfs.btrfs", ["-q", "-f", image]);
    assert.equal(mk.code, 0, mk.out);
    const mount = async () => {
      const m = await sh("mount", ["-o", "loop", image, mnt]);
      assert.equal(m.code, 0, m.out);
      mounted = true;
    };
    const unmount = async () => {
      const u = await sh("umount", [mnt]);
      assert.equal(u.code, 0, u.out);
      mounted = false;
    };
    await mount();
    const data = new Uint8Array(size);
    for (let at = 0; at < size; at += 65536) crypto.getRandomValues(data.subarray(at, at + 65536));
    await Deno.writeFile(join(mnt, "data.bin"), data);
    await unmount();
    // Find the second MiB's first bytes in the image (random, so found once) and zero them.
    const img = await Deno.readFile(image);
    const probe = data.subarray(1024 * 1024, 1024 * 1024 + 64);
    const at = indexOf(img, probe);
    assert.ok(at >= 0, "the file's data was not found in the image");
    img.fill(0, at, at + 64);
    await Deno.writeFile(image, img);
    await mount();
  } catch (e) {
    await dispose();
    throw e;
  }
  return { file: join(mnt, "data.bin"), size, [Symbol.asyncDispose]: dispose };
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  const first = needle[0]!;
  for (let i = haystack.indexOf(first); i >= 0; i = haystack.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** An S3 server on loopback whose measured PUTs are accepted and never answered. */
export interface HangingS3 extends AsyncDisposable {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** Keys stored now, in every bucket (`bucket/key`). */
  keys(): Promise<string[]>;
  /** Requests held without an answer so far. */
  readonly held: number;
}

/**
 * The stub S3 server of tools/services/s3_stub.ts on a free loopback port, except
 * that each PUT of a measured write object (a key ending in `/o<n>`) is read
 * and then never answered, as a stalled server does. Everything else (the
 * bucket check, markers, warm-up objects, listings, deletes) is answered.
 * Disposing answers the held requests with a 503 and stops the server.
 */
export function hangingS3(): HangingS3 {
  const stub = s3StubHandler(new Uint8Array(64 * 1024));
  const seen = new Set<string>();
  let release: () => void = () => {};
  const released = new Promise<void>((r) => (release = r));
  let held = 0;
  const server = localServer(async (req) => {
    const path = new URL(req.url).pathname;
    if (req.method === "PUT" && /\/o\d+$/.test(path)) {
      held++;
      await req.arrayBuffer();
      await released;
      return new Response("released", { status: 503 });
    }
    const res = await stub(req);
    if (req.method === "PUT" && res.status === 200) seen.add(decodeURIComponent(path.slice(1)));
    return res;
  });
  const { endpoint } = server;
  return {
    endpoint,
    get held() {
      return held;
    },
    async keys() {
      // What is still there: HEAD each key ever stored.
      const left: string[] = [];
      for (const k of seen) {
        const r = await fetch(`${endpoint}/${k}`, { method: "HEAD" });
        await r.body?.cancel();
        if (r.status === 200) left.push(k);
      }
      return left;
    },
    async [Symbol.asyncDispose]() {
      release();
      await server[Symbol.asyncDispose]();
    },
  };
}

/** The stub S3 server of tools/services/s3_stub.ts on a free loopback port. */
export interface StubS3 extends AsyncDisposable {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** Keys under `prefix` in `bucket` now, as its listing gives them. */
  keys(bucket: string, prefix: string): Promise<string[]>;
}

/**
 * The stub S3 server (objects up to 64 KiB kept whole, so --verify holds
 * for them; larger ones served as fixed bytes of their size), in this
 * process, on a free loopback port.
 */
export function stubS3(): StubS3 {
  const server = localServer(s3StubHandler(new Uint8Array(64 * 1024)));
  const { endpoint } = server;
  return {
    endpoint,
    async keys(bucket, prefix) {
      const r = await fetch(`${endpoint}/${bucket}?prefix=${encodeURIComponent(prefix)}`);
      return [...(await r.text()).matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!);
    },
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}

/** Credentials for servers that do not check them (the stub), distinctive enough to grep for. */
export const STUB_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: "AKIASTUBKEYID7Q2W9E4",
  AWS_SECRET_ACCESS_KEY: "stubSecretKey/8fJ2kL9pQ4rT6vX1zB3nM5",
  AWS_REGION: "us-east-1",
} as const;
