// The kernels' testing entry: the strict test backend, which the engine's tests
// run on to prove the seam is complete (issue 45). Not part of what ships.
export { HostAccessError, StrictBackend, type Transfer } from "../backend/strict.ts";
