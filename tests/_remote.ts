/**
 * Remote tiers for the tests: an S3 server and a shared file system mount.
 *
 * Either named by the environment (`TIERBENCH_S3_ENDPOINT`,
 * `TIERBENCH_S3_BUCKET`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
 * `TIERBENCH_PFS_DIR`), or, where Ceph is installed, a real single-node
 * cluster started by tools/services/ceph in {@linkcode CEPH_TEST_DIR}: one per
 * test process, shared by every test module, and stopped once the test
 * process has exited. Ports are fixed, so a second test process on the same
 * machine waits until the first is done with it.
 *
 * Why not an `unload` listener: `deno test` runs each test module in its own
 * runtime and fires `unload` at the end of every module, so stopping there
 * would stop (and the next module restart) the cluster once per module. A
 * small watchdog process waits for the test process instead, then stops the
 * cluster from its state directory with `sh` alone (tools/services/ceph/watchdog.ts),
 * under a lock that CI's exit trap takes too: a checkout deleted right after
 * the test command still has its cluster stopped.
 *
 * Without either, remote tests are ignored, their names saying what installs
 * Ceph; under `CI=true` they fail instead (tests/_requirements.ts).
 *
 * @module
 */

import { ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { cephUp } from "../tools/services/ceph/mod.ts";
import { startWatchdog } from "../tools/services/ceph/watchdog.ts";
import { newS3Client } from "../tiers/s3_client.ts";
import { pidAlive } from "../tiers/scratch.ts";
import { missing, type Need, needing } from "./_requirements.ts";

/** The state directory of the tests' cluster (ports are fixed: one per machine). */
export const CEPH_TEST_DIR = "/tmp/tierbench-ceph-tests";

/** The lock that serialises stopping the tests' cluster (watchdog and CI trap). */
export const CEPH_TEST_LOCK = `${CEPH_TEST_DIR}.lock`;

/** Names the test process that owns the tests' cluster; removed when it is stopped. */
const OWNER_FILE = `${CEPH_TEST_DIR}.owner`;

/** Where the remote tiers are and how to reach them. */
export interface RemoteEnv {
  /** S3 endpoint URL. */
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** A directory on a shared file system mount (CephFS); `""` when there is none. */
  pfsDir: string;
  /**
   * The state directory of the local cluster the tests started; undefined
   * when the environment named the servers (then fault tests that stop
   * daemons are skipped).
   */
  cephDir: string | undefined;
}

/** How the remote tiers are provided here, decided without starting anything. */
export function remoteSource(): "env" | "ceph" | undefined {
  if (Deno.env.get("TIERBENCH_S3_ENDPOINT")) return "env";
  return missing(["ceph"]).length === 0 ? "ceph" : undefined;
}

function fromEnvironment(): RemoteEnv | undefined {
  const get = (name: string) => Deno.env.get(name) ?? "";
  const env: RemoteEnv = {
    endpoint: get("TIERBENCH_S3_ENDPOINT"),
    bucket: get("TIERBENCH_S3_BUCKET") || "tierbench",
    accessKeyId: get("AWS_ACCESS_KEY_ID"),
    secretAccessKey: get("AWS_SECRET_ACCESS_KEY"),
    region: get("AWS_REGION") || "us-east-1",
    pfsDir: get("TIERBENCH_PFS_DIR"),
    cephDir: undefined,
  };
  return env.endpoint && env.accessKeyId && env.secretAccessKey ? env : undefined;
}

function readOwner(): number | undefined {
  try {
    const pid = Number.parseInt(Deno.readTextFileSync(OWNER_FILE).trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** How long to wait for another test process to finish with the cluster. */
const OWNER_WAIT_MS = 30 * 60_000;
/** How long a dead owner's watchdog may take to stop the cluster and let go. */
const STALE_OWNER_MS = 90_000;

/**
 * Makes this test process the owner of the tests' cluster, waiting while
 * another live test process owns it (ports are fixed: one cluster per
 * machine), and starts a watchdog that stops the cluster and gives up
 * ownership once this process has exited. Idempotent within a process.
 */
async function ownTestCluster(): Promise<void> {
  const deadline = Date.now() + OWNER_WAIT_MS;
  let deadSince: number | undefined;
  let said = false;
  for (;;) {
    try {
      Deno.writeTextFileSync(OWNER_FILE, `${Deno.pid}\n`, { createNew: true });
      startOwnerWatchdog();
      return;
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    const owner = readOwner();
    if (owner === Deno.pid) return;
    if (owner !== undefined && pidAlive(owner)) deadSince = undefined;
    else if (deadSince === undefined) deadSince = Date.now();
    else if (Date.now() - deadSince > STALE_OWNER_MS) {
      // Its watchdog is gone too: take over.
      Deno.removeSync(OWNER_FILE);
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`test process ${owner} has held the local Ceph cluster for too long`);
    }
    if (!said) {
      said = true;
      console.warn(`waiting for test process ${owner}, which is using the tests' Ceph cluster`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * A process that waits for this one to exit, then stops the cluster from its
 * state directory (tools/services/ceph/watchdog.ts: nothing of this checkout runs) and
 * lets go of it.
 */
function startOwnerWatchdog(): void {
  startWatchdog({
    ownerPid: Deno.pid,
    dir: CEPH_TEST_DIR,
    lock: CEPH_TEST_LOCK,
    ownerFile: OWNER_FILE,
  });
}

/**
 * The remote tiers: from the environment, else the tests' local Ceph cluster
 * (started if it is not up; its keys change when it is restarted, so call
 * this in each test rather than keeping the answer), else undefined. Puts
 * the credentials into this process's environment, where the SDK's default
 * chain finds them.
 *
 * @example
 * ```ts ignore
 * const env = await remoteEnv();
 * if (env) console.log(env.endpoint, env.bucket, env.pfsDir);
 * ```
 */
export async function remoteEnv(): Promise<RemoteEnv | undefined> {
  const source = remoteSource();
  let env: RemoteEnv | undefined;
  if (source === "env") env = fromEnvironment();
  else if (source === "ceph") {
    await ownTestCluster();
    const c = await cephUp({ dir: CEPH_TEST_DIR, progress: () => {} });
    env = { ...c, cephDir: CEPH_TEST_DIR };
  }
  if (env) {
    Deno.env.set("AWS_ACCESS_KEY_ID", env.accessKeyId);
    Deno.env.set("AWS_SECRET_ACCESS_KEY", env.secretAccessKey);
    Deno.env.set("AWS_REGION", env.region);
  }
  return env;
}

/** Options of {@linkcode remoteTest}. */
export interface RemoteTestOptions {
  /** The test stops and starts daemons, so it needs the tests' own cluster. */
  readonly localCluster?: boolean;
  /** What else the test needs (a launcher: openmpi, slurm). */
  readonly needs?: readonly Need[];
}

/**
 * A test against the remote tiers: the environment's server, else the tests'
 * own Ceph cluster (root and Ceph needed). Ignored, its name saying what is
 * missing, where there are none — except under `CI=true`, where it fails
 * instead.
 *
 * @example
 * ```ts ignore
 * remoteTest("S3Tier.setup() makes a scratch prefix", async (env) => {
 *   // env.endpoint, env.bucket …
 * });
 * ```
 */
export function remoteTest(
  name: string,
  fn: (env: RemoteEnv) => Promise<void>,
  options: RemoteTestOptions = {},
): void {
  const needs: Need[] = [
    ...(options.localCluster === true
      ? ["own-ceph", "root", "ceph"] as const
      : remoteSource() === "env"
      ? []
      : ["root", "ceph"] as const),
    ...(options.needs ?? []),
  ];
  Deno.test(needing(needs, {
    name,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const env = await remoteEnv();
      if (!env) {
        throw new Error(
          "TIERBENCH_S3_ENDPOINT is set but AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not",
        );
      }
      await fn(env);
    },
  }));
}

/** A client for the tests' S3 server (credentials from the environment {@linkcode remoteEnv} set). */
export function testS3Client(env: RemoteEnv): S3Client {
  return newS3Client({ endpoint: env.endpoint, region: env.region });
}

/** Every key under `prefix` in the tests' bucket. */
export async function listKeys(env: RemoteEnv, prefix: string): Promise<string[]> {
  const client = testS3Client(env);
  try {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const r = await client.send(
        new ListObjectsV2Command({
          Bucket: env.bucket,
          Prefix: prefix,
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
      );
      for (const o of r.Contents ?? []) if (o.Key) keys.push(o.Key);
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token !== undefined);
    return keys;
  } finally {
    client.destroy();
  }
}

/** A key prefix no other test uses. */
export function uniquePrefix(label: string): string {
  return `tests/${label}-${crypto.randomUUID().slice(0, 8)}`;
}
