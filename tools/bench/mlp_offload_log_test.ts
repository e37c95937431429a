import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  compareReplay,
  fromFixture,
  logStats,
  type MlpOffloadLog,
  parseMlpOffloadLog,
  programStats,
  replayProgram,
} from "./mlp_offload_log.ts";
import { mlpOffload } from "../../workloads/mlp_offload.ts";
import { resolveSetup } from "../../workloads/setup.ts";

const FIXTURE = fileURLToPath(new URL("./testdata/mlp_offload_70b_log.json", import.meta.url));
const log: MlpOffloadLog = fromFixture(JSON.parse(Deno.readTextFileSync(FIXTURE)));

Deno.test("the 70B fixture names the artifact log and commit it was parsed from", () => {
  assert.match(
    log.source!.log!,
    /^mauryaavinash95\/MLP-Offload@e181b47b4b30c0b19e508b27e91a64c07ef9d30a:logs\/log-70B-.*single_proc1.*-tmp-vast\.log$/,
  );
  assert.equal(log.passes.length, 22);
  assert.deepEqual(
    [
      log.config.buffer_count,
      log.config.dist_opt_ratio,
      log.config.one_at_time,
      log.config.grad_skip,
    ],
    [25, 3, true, true],
  );
});

Deno.test("mlp-offload replays the artifact's 70B log: order, reads, hits, writes and cached subgroups per pass, rank and path", () => {
  const stats = logStats(log);
  // the log: 82 subgroups per rank, 54 local and 28 remote; 8 of each cached (25 // 3)
  for (const [pass, ranks] of stats.entries()) {
    for (const r of ranks) {
      assert.deepEqual(
        [r.local.order.length, r.local.writes, r.local.kept.length],
        [54, 46, 8],
        `pass ${pass}`,
      );
      assert.deepEqual([r.remote.order.length, r.remote.writes, r.remote.kept.length], [28, 20, 8]);
      assert.deepEqual([r.local.hits, r.remote.hits], pass === 0 ? [0, 0] : [8, 8]);
    }
  }
  const rows = compareReplay(stats, programStats(replayProgram(log)));
  assert.equal(rows.length, 22 * 4 * 2);
  const bad = rows.filter((r) => !r.equal);
  assert.deepEqual(bad, []);
});

Deno.test("the replay tells the public branch's buffer_count // 4 − 1 cache from the logged one", () => {
  const setup = resolveSetup({
    model: "llama2-70b",
    subgroupSize: 1e8,
    scale: 1e-4,
    iterations: 22,
    warmup: 0,
  });
  const old = mlpOffload.build(setup, { local: ["local"], remote: "remote" }, {
    bufferCount: 25,
    swapGradients: false,
    cacheSubgroups: 5,
  });
  const rows = compareReplay(logStats(log), programStats(old));
  assert.equal(rows.filter((r) => r.equal).length, 0);
  assert.deepEqual([rows[0]!.log.writes, rows[0]!.generator.writes], [46, 49]);
});

Deno.test("parseMlpOffloadLog() reads each rank's swap-outs and waits, lines run together included", () => {
  const config = [
    "[x] [INFO] [launch.py:163:main] dist_world_size=2",
    "cmd = python pretrain_gpt.py --num-layers 80 --hidden-size 8192 --num-attention-heads 64 " +
    "--ffn-hidden-size 28672 --num-key-value-heads 4",
    "swap_config .... device='nvme' buffer_count=6 dist_opt_enable_caching=True " +
    "dist_opt_grad_skip=True dist_opt_one_at_time=1 dist_opt_ratio=2 dist_opt_compress=0",
    "zero_config .... sub_group_size=100000000 cpu_offload_param=None",
  ];
  const pass = [
    "-> update:start:1",
    " --- Updating in order: [0, 1, 2, 3]",
    " --- Updating in order: [0, 1, 2, 3]",
    "-> read_wait[0][0]: 0.1-> read_wait[1][0]: 0.1",
    "-> write_wait[0][0]: 0.01-> write_wait[1][0]: 8.8e-05",
    "-> write_wait[0][1]: 0.01",
    "-> complete_swap_out[0][-1]: 0.5",
    "-> complete_swap_out[0][-1]: 0.4",
    "-> write_wait[0][2]: 0.9",
    "-> write_wait[0][3]: 0.0003",
    "-> write_wait[1][1]: 0.01",
    "-> complete_swap_out[1][-1]: 1.5e-4-> write_wait[1][2]: 0.3",
    "-> write_wait[1][3]: 0.0003",
    "-> update:stop:2",
  ];
  const parsed = parseMlpOffloadLog([...config, ...pass].join("\n"));
  assert.equal(parsed.config.ranks, 2);
  assert.equal(parsed.config.buffer_count, 6);
  assert.equal(parsed.config.layers, 80);
  assert.deepEqual(parsed.passes[0]!.order, [0, 1, 2, 3]);
  assert.deepEqual(parsed.passes[0]!.ranks[0], { sequence: [0, 1, 2, 3], waits: [0, 0, 2, 0] });
  assert.deepEqual(parsed.passes[0]!.ranks[1], { sequence: [0, 1, 2, 3], waits: [0, 0, 1, 0] });
  // dist_opt_ratio 2: 0 and 2 remote; the remote path wrote up to subgroup 2, kept none; the
  // local path waited nowhere, so it wrote nothing and kept 1 and 3
  const [r0] = logStats(parsed)[0]!;
  assert.deepEqual(r0!.remote, { order: [0, 2], reads: 2, hits: 0, writes: 2, kept: [] });
  assert.deepEqual(r0!.local, { order: [1, 3], reads: 2, hits: 0, writes: 0, kept: [1, 3] });
  assert.throws(
    () => parseMlpOffloadLog([...config, ...pass.filter((l) => !l.includes("[0][3]"))].join("\n")),
    /pass 0, rank 0: 3 write_wait lines for 4 subgroups/,
  );
  assert.throws(() => parseMlpOffloadLog(pass.join("\n")), /no buffer_count/);
});
