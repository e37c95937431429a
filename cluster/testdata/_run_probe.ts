/**
 * Runs group_probe.ts processes for the tests and reads their JSON lines.
 *
 * @module
 */

import { joinGroup } from "../group.ts";
import type { Group, LaunchInfo } from "../types.ts";

/** The probe script's path. */
export const PROBE = new URL("./group_probe.ts", import.meta.url).pathname;

/** A line the probe printed once its step ended. */
export interface ProbeResult {
  rank: number;
  ok: boolean;
  launcher?: string;
  root?: number;
  members?: { rank: number; node: string; host: string; pid: number; version: string }[];
  gathered?: string[];
  broadcast?: string;
  error?: {
    name: string;
    message: string;
    rank?: number;
    node?: string;
    ranks?: { rank: number; node: string }[];
    mine?: { rank: number; node: string; version: string };
    theirs?: { rank: number; node: string; version: string };
  };
}

/** A free TCP port on loopback (listened on, then closed). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  return port;
}

/**
 * Two ranks of one torchrun-style TCP group in this process: the member
 * (rank 1) and the hub (rank 0), on a free loopback port.
 */
export async function tcpPair(): Promise<{ member: Group; hub: Group; port: number }> {
  const port = freePort();
  const info = (rank: number): LaunchInfo => ({
    launcher: "torchrun",
    transport: "tcp",
    rank,
    size: 2,
    localRank: rank,
    node: `${Deno.hostname()}#${rank}`,
    address: { host: "127.0.0.1", port },
  });
  const opts = { version: "1", timeoutMs: 10_000 };
  const [member, hub] = await Promise.all([joinGroup(info(1), opts), joinGroup(info(0), opts)]);
  return { member, hub, port };
}

/** The arguments that run the probe under `deno run -A`. */
export function probeArgs(): string[] {
  return [Deno.execPath(), "run", "-A", PROBE];
}

/** The environment a child starts from: PATH, HOME and DENO_DIR only, so no outer launcher's variables leak in. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of ["PATH", "HOME", "DENO_DIR"]) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  return env;
}

/** One running probe: its lines so far, a wait for a line, and its end. */
export class Probe {
  readonly lines: string[] = [];
  readonly done: Promise<{ code: number; stderr: string }>;
  #wake: (() => void)[] = [];

  constructor(readonly child: Deno.ChildProcess) {
    const reading = (async () => {
      let rest = "";
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop()!;
        this.lines.push(...parts);
        for (const w of this.#wake.splice(0)) w();
      }
      if (rest !== "") this.lines.push(rest);
      for (const w of this.#wake.splice(0)) w();
    })();
    const stderr = new Response(child.stderr).text();
    this.done = Promise.all([child.status, reading, stderr]).then(([s, , e]) => ({
      code: s.code,
      stderr: e,
    }));
  }

  /** Waits until a line contains `text` (or the process ends: then rejects). */
  async waitFor(text: string): Promise<void> {
    let ended = false;
    this.done.finally(() => ended = true);
    while (!this.lines.some((l) => l.includes(text))) {
      if (ended) throw new Error(`the probe ended without printing ${text}`);
      await Promise.race([new Promise<void>((r) => this.#wake.push(r)), this.done]);
    }
  }

  /** The result lines (those with a rank and ok). */
  results(): ProbeResult[] {
    return this.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      .filter((o) => typeof o.ok === "boolean");
  }
}

/** Starts `command args` with `env` (on top of {@linkcode baseEnv}), killed after 120 s at most. */
export function spawn(command: string, args: string[], env: Record<string, string>): Probe {
  return new Probe(
    new Deno.Command(command, {
      args,
      env: { ...baseEnv(), ...env },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(120_000),
    }).spawn(),
  );
}

/** Starts `size` torchrun-style probes on loopback, each a node of its own. */
export function spawnTorchrun(
  size: number,
  env: (rank: number) => Record<string, string>,
): Probe[] {
  const port = String(freePort());
  return Array.from({ length: size }, (_, rank) =>
    spawn(Deno.execPath(), ["run", "-A", PROBE], {
      RANK: String(rank),
      WORLD_SIZE: String(size),
      LOCAL_RANK: String(rank),
      MASTER_ADDR: "127.0.0.1",
      MASTER_PORT: port,
      TIERBENCH_NODE_PER_RANK: "1",
      ...env(rank),
    }));
}
