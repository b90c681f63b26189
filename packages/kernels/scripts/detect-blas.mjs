// Prints 1 when a CBLAS (OpenBLAS) is installed and wanted, else 0. binding.gyp
// reads it. OPENTINKER_KERNELS_BLAS=off forces the addon's own kernels only.
import { existsSync } from "node:fs";

const wanted = (process.env.OPENTINKER_KERNELS_BLAS ?? "auto").toLowerCase() !== "off";
const headers = [
  "/usr/include/x86_64-linux-gnu/cblas.h",
  "/usr/include/aarch64-linux-gnu/cblas.h",
  "/usr/include/cblas.h",
  "/usr/include/openblas/cblas.h",
];
const libraries = [
  "/usr/lib/x86_64-linux-gnu/libopenblas.so",
  "/usr/lib/aarch64-linux-gnu/libopenblas.so",
  "/usr/lib/libopenblas.so",
  "/usr/lib64/libopenblas.so",
];
const found = headers.some(existsSync) && libraries.some(existsSync);
process.stdout.write(wanted && found ? "1" : "0");
