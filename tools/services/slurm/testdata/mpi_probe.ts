/**
 * A tiny Open MPI 4.1 probe through FFI, for the launcher's test: prints
 * `rank SIZE` once MPI_Init has joined the job. Run it under a launcher
 * (`srun --mpi=pmix`, `mpirun`).
 *
 * @module
 */

const RTLD_NOW = 2;
const RTLD_GLOBAL = 0x100;

// Open MPI's plugins resolve libmpi's symbols globally: load it RTLD_GLOBAL first.
const libc = Deno.dlopen("libc.so.6", {
  dlopen: { parameters: ["buffer", "i32"], result: "pointer" },
  dlsym: { parameters: ["pointer", "buffer"], result: "pointer" },
});
const cstr = (s: string) => new TextEncoder().encode(`${s}\0`);
const handle = libc.symbols.dlopen(cstr("libmpi.so.40"), RTLD_NOW | RTLD_GLOBAL);
if (handle === null) throw new Error("cannot load libmpi.so.40");
// MPI_COMM_WORLD is the address of this global, not its value.
const world = libc.symbols.dlsym(handle, cstr("ompi_mpi_comm_world"));
if (world === null) throw new Error("libmpi.so.40 has no ompi_mpi_comm_world");

const mpi = Deno.dlopen("libmpi.so.40", {
  MPI_Init: { parameters: ["pointer", "pointer"], result: "i32" },
  MPI_Comm_rank: { parameters: ["pointer", "buffer"], result: "i32" },
  MPI_Comm_size: { parameters: ["pointer", "buffer"], result: "i32" },
  MPI_Finalize: { parameters: [], result: "i32" },
});
const check = (what: string, rc: number) => {
  if (rc !== 0) throw new Error(`${what} returned ${rc}`);
};
check("MPI_Init", mpi.symbols.MPI_Init(null, null));
const rank = new Int32Array(1);
const size = new Int32Array(1);
check("MPI_Comm_rank", mpi.symbols.MPI_Comm_rank(world, rank));
check("MPI_Comm_size", mpi.symbols.MPI_Comm_size(world, size));
console.log(`${rank[0]} ${size[0]}`);
check("MPI_Finalize", mpi.symbols.MPI_Finalize());
