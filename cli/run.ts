/**
 * `tierbench run`: one fio-style job on one tier.
 *
 * ```sh
 * deno task tierbench run --tier file:/mnt/nvme --rw read --bs 1m --iodepth 8 \
 *   --engine libaio --direct --size 512m --runtime 5 --ramp 1 --output out.json
 * ```
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { DEFAULTS, ENGINES, FILE_LAYOUTS, parseJobOptions, RW_MODES } from "../core/config.ts";
import { RATE_PROCESSES } from "../core/rate.ts";
import {
  addOutputOptions,
  addS3Options,
  bsOption,
  checkOutputTarget,
  directOption,
  fioAlias,
  iodepthOption,
  ioengineOption,
  outputFormatOption,
  rampOf,
  rampOption,
  rampTimeOption,
  runtimeOption,
  sizeOption,
  timeoutOption,
  verifyOption,
} from "./_options.ts";
import { ConfigError } from "../core/errors.ts";
import { chooseAsyncEngine } from "../engines/engine_choice.ts";
import { resolvePath } from "./_paths.ts";
import { runAndReport } from "./_session.ts";
import { launchedBy, runAcross } from "./_cluster.ts";
import { runJobFile } from "./_jobfile.ts";

/** The options a job file gives itself; on the command line beside one they are refused. */
const NOT_WITH_JOB_FILE = [
  "tier",
  "rw",
  "rwmixread",
  "bs",
  "size",
  "ioSize",
  "io_size",
  "runtime",
  "ramp",
  "ramp_time",
  "iodepth",
  "numjobs",
  "direct",
  "engine",
  "ioengine",
  "fixedbufs",
  "registerfiles",
  "sqthreadPoll",
  "sqthread_poll",
  "rate",
  "rateIops",
  "rate_iops",
  "rateProcess",
  "rate_process",
  "seed",
  "randseed",
  "logAvgMsec",
  "log_avg_msec",
  "nrfiles",
  "fileLayout",
  "filename",
  "allowDevice",
  "endFsync",
  "objectSize",
  "partSize",
  "multipartThreshold",
  "verify",
  "name",
  "stonewalling",
] as const;

/** How `run` words the S3 options: it spells the defaults out. */
const RUN_S3_HELP = {
  endpoint:
    "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)",
  region: "s3: region to sign for (default: $AWS_REGION, else us-east-1)",
};

/** The `run` command. */
export function runCommand() {
  const cmd = new Command("run")
    .description(
      "run one fio-style job on one tier, or the jobs of a fio job file (docs/jobfiles.md)",
    )
    .argument("[jobfile]", "a fio job file (.fio): run its jobs as fio would")
    .option(
      "--tier <spec>",
      "where to do I/O: file:DIR, memory:[DIR] (default /dev/shm), pfs:DIR, " +
        "s3://BUCKET[/PREFIX], null: (required without a job file)",
    )
    .addOption(new Option("--rw <mode>", "access pattern").choices(RW_MODES).default(DEFAULTS.rw))
    .option("--rwmixread <pct>", "percentage of reads for randrw", DEFAULTS.rwmixread)
    .addOption(bsOption("block size (k, m, g suffixes, binary)").default(DEFAULTS.bs))
    .addOption(sizeOption("size of each job's file").default(DEFAULTS.size))
    .option("--io-size <size>", "bytes each job moves when not time-based (default: --size)")
    .addOption(fioAlias("--io_size <size>", "--io-size").conflicts("ioSize"))
    .addOption(runtimeOption("measure for this long, looping over the file (time-based)"))
    .addOption(
      rampOption("warm-up before measuring, excluded from results").default(DEFAULTS.ramp),
    )
    .addOption(rampTimeOption())
    .addOption(
      iodepthOption(
        "I/Os in flight per job (file tiers: above 1 without --engine picks io_uring where the " +
          "kernel allows it, else libaio; s3: requests)",
      ).default(DEFAULTS.iodepth),
    )
    .option("--numjobs <n>", "parallel jobs, each on its own file and Worker", DEFAULTS.numjobs)
    .addOption(
      directOption("open files with O_DIRECT (bypass the page cache); also fio's --direct=1/0")
        .default(false),
    )
    .addOption(
      new Option(
        "--engine <name>",
        `I/O engine (default: ${DEFAULTS.engine}; with --iodepth above 1 on file tiers: io_uring ` +
          "where the kernel allows it, else libaio, said in options.engine_choice)",
      ).choices(ENGINES),
    )
    .addOption(ioengineOption(ENGINES))
    .option("--fixedbufs", "io_uring: register the I/O buffers (READ_FIXED/WRITE_FIXED)")
    .option("--registerfiles", "io_uring: register the job's files (IOSQE_FIXED_FILE)")
    .option("--sqthread-poll", "io_uring: a kernel thread polls the submission queue (SQPOLL)")
    .addOption(fioAlias("--sqthread_poll", "--sqthread-poll").conflicts("sqthreadPoll"))
    .option(
      "--rate <bytes>",
      "open loop: each job issues bs-sized requests at this many bytes/s (k, m, g; fio's rate); " +
        "lat counts from each request's intended start",
    )
    .option("--rate-iops <n>", "open loop: each job issues this many requests/s (fio's rate_iops)")
    .addOption(
      new Option(
        "--rate-process <process>",
        "with --rate or --rate-iops: linear (even gaps) or poisson (exponential gaps drawn from " +
          "--seed); fio's rate_process, default linear",
      ).choices(RATE_PROCESSES),
    )
    .addOption(fioAlias("--rate_iops <n>", "--rate-iops").conflicts("rateIops"))
    .addOption(
      fioAlias("--rate_process <process>", "--rate-process").choices(RATE_PROCESSES)
        .conflicts("rateProcess"),
    )
    .option("--seed <n>", "seed for random offsets and the read/write mix", DEFAULTS.seed)
    .addOption(fioAlias("--randseed <n>", "--seed").conflicts("seed"))
    .option("--log-avg-msec <ms>", "interval of the bandwidth time series", DEFAULTS.logAvgMsec)
    .addOption(fioAlias("--log_avg_msec <ms>", "--log-avg-msec").conflicts("logAvgMsec"))
    .option(
      "--nrfiles <n>",
      "files per job, blocks striped round-robin over them",
      DEFAULTS.nrfiles,
    )
    .addOption(
      new Option(
        "--file-layout <layout>",
        "a file set per job, or one shared file with a region each",
      )
        .choices(FILE_LAYOUTS).default(DEFAULTS.fileLayout),
    )
    .option("--filename <file>", "read an existing file instead of laying one out (never written)")
    .option(
      "--allow-device",
      "--filename may be a block device: read only, never written (devices are refused otherwise)",
    )
    .option("--end-fsync", "fsync every file when a job ends (default for pfs)")
    .option("--no-end-fsync", "do not fsync at the end of a job");
  return addOutputOptions(
    addS3Options(cmd, RUN_S3_HELP)
      .option("--object-size <size>", "s3: size of the objects reads GET from (default: --bs)")
      .option("--part-size <size>", "s3: part size of multipart uploads", DEFAULTS.partSize)
      .option(
        "--multipart-threshold <size>",
        "s3: objects larger than this are written by multipart upload",
        DEFAULTS.multipartThreshold,
      )
      .addOption(
        timeoutOption(
          "fail the run when one request (an I/O, an S3 request) takes longer than this",
        ),
      )
      .addOption(
        verifyOption(
          "stamp every block written with a header and checksum, check every block read",
        ),
      )
      .option("--name <name>", "label for the table and results")
      .addOption(outputFormatOption())
      .option(
        "--stonewalling",
        "across processes (mpirun, srun): stop every process when the first finishes its " +
          "--io-size (IOR's stonewalling, not fio's stonewall)",
      ),
  ).action(async (jobfile, o, command) => {
    checkOutputTarget(o);
    if (jobfile !== undefined) {
      const given = NOT_WITH_JOB_FILE.find((k) => command.getOptionValueSource(k) === "cli");
      if (given !== undefined) {
        const flag = command.options.find((opt) => opt.attributeName() === given)?.long ?? given;
        throw new ConfigError(
          flag.replace(/^--/, ""),
          "job options come from the job file with one: give it in the file's [global] section",
        );
      }
      await runJobFile(resolvePath(jobfile), o, launchedBy());
      return;
    }
    const job = parseJobOptions({
      timeout: o.timeout,
      name: o.name,
      tier: o.tier,
      rw: o.rw,
      rwmixread: o.rwmixread,
      bs: o.bs,
      size: o.size,
      ioSize: o.io_size ?? o.ioSize,
      runtime: o.runtime,
      ramp: rampOf(o),
      iodepth: o.iodepth,
      numjobs: o.numjobs,
      direct: o.direct,
      engine: o.ioengine ?? o.engine,
      fixedbufs: o.fixedbufs,
      registerfiles: o.registerfiles,
      sqthreadPoll: o.sqthread_poll ?? o.sqthreadPoll,
      seed: o.randseed ?? o.seed,
      logAvgMsec: o.log_avg_msec ?? o.logAvgMsec,
      nrfiles: o.nrfiles,
      fileLayout: o.fileLayout,
      endFsync: o.endFsync,
      filename: o.filename === undefined ? undefined : resolvePath(o.filename),
      allowDevice: o.allowDevice,
      verify: o.verify,
      endpoint: o.endpoint,
      region: o.region,
      objectSize: o.objectSize,
      partSize: o.partSize,
      multipartThreshold: o.multipartThreshold,
      rate: o.rate,
      rateIops: o.rateIops ?? o.rate_iops,
      rateProcess: o.rateProcess ?? o.rate_process,
    }, chooseAsyncEngine);
    const launch = launchedBy();
    if (launch && job.rate) {
      throw new ConfigError(
        o.rate !== undefined ? "rate" : "rate-iops",
        "is not available across processes yet: the aggregate has no schedule figures",
        "a run in one process",
      );
    }
    if (o.stonewalling && !launch) {
      throw new ConfigError(
        "stonewalling",
        "stops the other processes of a run across processes, and no launcher started this one",
        "mpirun, srun, or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set",
      );
    }
    if (o.stonewalling && job.runtimeMs !== undefined) {
      throw new ConfigError(
        "stonewalling",
        "a time-based run (--runtime) already stops every process together",
        "a run of --size or --io-size bytes",
      );
    }
    if (launch) await runAcross(launch, [job], "run", o, o.stonewalling === true);
    else await runAndReport([job], "run", o);
  });
}
