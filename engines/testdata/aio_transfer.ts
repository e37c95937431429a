// Writes BYTES to PATH through one AioChannel (1 MiB requests, 8 in flight, O_DIRECT), for a
// test that watches its io_submit calls under strace.
import { AioChannel } from "../libaio_stream.ts";

const [path, bytes] = Deno.args;
const channel = new AioChannel(8, 1 << 20, true);
try {
  await channel.transfer(path!, true, Number(bytes));
} finally {
  channel.close();
}
