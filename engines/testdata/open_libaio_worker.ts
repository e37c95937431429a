// A Worker that opens libaio.so.1 through engines/_aio_ring.ts and says which library it got.
import { fromLibaio } from "../_aio_ring.ts";

const scope = globalThis as unknown as { postMessage(m: string): void };
scope.postMessage(fromLibaio()?.source ?? "none");
