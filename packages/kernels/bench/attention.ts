// Filled in with the attention kernels.
export function benchAttentionDecode(): null {
  return null;
}
