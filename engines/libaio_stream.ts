/**
 * One asynchronous I/O stream of a rank through libaio, the way DeepSpeed's
 * aio handle moves a tensor to or from a swap file: the transfer loop is the
 * rank streams' own (engines/_stream.ts), over one libaio context whose
 * submissions and waits run on Deno's blocking pool.
 *
 * @module
 */

import { AioQueue } from "./_aio_queue.ts";
import { QueueChannel, type StreamOptions } from "./_stream.ts";

/**
 * A libaio context with its buffers, for one stream of one rank: each
 * {@linkcode AioChannel.transfer} moves one object, keeping up to `iodepth`
 * requests of at most `bs` bytes in flight, and waits for completions on
 * Deno's blocking pool. One transfer at a time per channel.
 *
 * @example
 * ```ts ignore
 * const ch = new AioChannel(8, 1 << 20, true);
 * try { await ch.transfer("/mnt/nvme/r0/params", true, 64 << 20); } finally { ch.close(); }
 * ```
 */
export class AioChannel extends QueueChannel {
  /**
   * Sets up the context and its `iodepth` buffers of `bs` bytes (4 KiB
   * aligned, random bytes). Throws {@linkcode IoError} when io_setup fails.
   * `stop` and `options` (--timeout, --verify): see {@linkcode QueueChannel}.
   */
  constructor(
    iodepth: number,
    bs: number,
    direct: boolean,
    stop?: () => void,
    options: StreamOptions = {},
  ) {
    super(AioQueue.open(iodepth, bs, 4096, QueueChannel.openFailed), direct, stop, options);
  }
}
