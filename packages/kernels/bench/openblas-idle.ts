// OpenBLAS's worker threads spin for about 2^28 cycles (~0.1 s) after each call
// before they sleep. Interleaved with our pool on the same cores, they took the
// second core from whichever side ran next: our 2-thread GEMM at [512, 896, 4864]
// ran at 290 GFLOPS alone and 196 right after an OpenBLAS call (Zen 5, 2 cores).
// With the timeout at its minimum (2^4 cycles) they sleep at once and both sides
// start on idle cores. Imported first, so it is set before OpenBLAS loads; a
// value the caller set wins. The JSON's machine.openblas.threadTimeout records it.
process.env.OPENBLAS_THREAD_TIMEOUT ??= "4";
