/**
 * One asynchronous I/O stream of a rank through io_uring, as `AioChannel`
 * (libaio_stream.ts) does it through libaio (and as DataStates-LLM's io_uring
 * handler moves a checkpoint): the transfer loop is the rank streams' own
 * (engines/_stream.ts), over one ring (engines/_uring.ts) whose
 * io_uring_enter calls run on Deno's blocking pool; completions are read
 * from the shared CQ ring on the rank's thread, all that are ready at once.
 *
 * @module
 */

import { UringQueue } from "./_uring_queue.ts";
import { QueueChannel, type StreamOptions } from "./_stream.ts";

/**
 * An io_uring ring with its buffers, for one stream of one rank: each
 * {@linkcode UringChannel.transfer} moves one object, keeping up to
 * `iodepth` requests of at most `bs` bytes in flight. The same interface as
 * `AioChannel`. One transfer at a time per channel.
 *
 * @example
 * ```ts ignore
 * const ch = new UringChannel(8, 1 << 20, true);
 * try { await ch.transfer("/mnt/nvme/r0/params", true, 64 << 20); } finally { ch.close(); }
 * ```
 */
export class UringChannel extends QueueChannel {
  /**
   * Sets the ring and its `iodepth` buffers of `bs` bytes up (4 KiB aligned,
   * random bytes). Throws an Error naming kernel.io_uring_disabled when the
   * kernel refuses io_uring, else {@linkcode IoError} for a failed setup.
   * `stop` and `options` (--timeout, --verify): see {@linkcode QueueChannel}.
   */
  constructor(
    iodepth: number,
    bs: number,
    direct: boolean,
    stop?: () => void,
    options: StreamOptions = {},
  ) {
    const setup = { entries: iodepth, slotBytes: bs, alignment: 4096 };
    super(UringQueue.open(setup, QueueChannel.openFailed), direct, stop, options);
  }
}
