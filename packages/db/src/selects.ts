// One explicit `select` per model, so secret columns (key hashes, password hashes)
// never leave packages/db by accident.

export const teamSelect = {
  id: true,
  slug: true,
  name: true,
  maxAdapters: true,
  maxConcurrentJobs: true,
  maxQueuedRequests: true,
  createdAt: true,
} as const;

export const userSelect = { id: true, email: true, name: true, createdAt: true } as const;

export const apiKeySelect = {
  id: true,
  teamId: true,
  name: true,
  prefix: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
} as const;

/** What a policy trains: its kind and, for LoRA, rank, scale and modules. */
export const policySpecSelect = {
  kind: true,
  rank: true,
  alpha: true,
  trainAttn: true,
  trainMlp: true,
  trainUnembed: true,
} as const;

export const adapterSelect = {
  id: true,
  teamId: true,
  baseModelId: true,
  name: true,
  ...policySpecSelect,
  seed: true,
  status: true,
  step: true,
  createdAt: true,
  updatedAt: true,
  baseModel: { select: { name: true } },
} as const;

export const snapshotSelect = {
  id: true,
  teamId: true,
  adapterId: true,
  jobId: true,
  version: true,
  handle: true,
  path: true,
  checksum: true,
  trainerStep: true,
  createdAt: true,
  supersededAt: true,
  // Its names among the adapter's named versions ("best").
  tags: { select: { name: true } },
} as const;

export const jobSelect = {
  id: true,
  name: true,
  teamId: true,
  adapterId: true,
  environmentId: true,
  kind: true,
  config: true,
  status: true,
  step: true,
  error: true,
  errorClass: true,
  faults: true,
  lastFault: true,
  waitingFor: true,
  workerId: true,
  cancelRequestedAt: true,
  createdAt: true,
  startedAt: true,
  finishedAt: true,
} as const;

export const workerSelect = {
  id: true,
  host: true,
  pid: true,
  capacity: true,
  loadedModels: true,
  device: true,
  deviceDescription: true,
  deviceMemoryMiB: true,
  kvCacheMiB: true,
  policyPoolMiB: true,
  adapterMemoryMiB: true,
  status: true,
  startedAt: true,
  heartbeatAt: true,
} as const;

export const environmentSelect = {
  id: true,
  teamId: true,
  name: true,
  kind: true,
  builtin: true,
  url: true,
  config: true,
  createdAt: true,
} as const;

export const checkpointSelect = {
  name: true,
  step: true,
  sizeBytes: true,
  createdAt: true,
} as const;
