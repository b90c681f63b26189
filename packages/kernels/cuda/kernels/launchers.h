// The host launchers every kernels/*.cu defines: one declaration each, for the
// CUDA addon (addon/probe_binding.cc links them in and, with the CUDA backend,
// binds them to ops). Each returns the launch's cudaError_t.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../include/ot_cuda/runtime.h"

namespace ot_cuda::kernels {
struct LoraSegment;
struct LoraAdapterF32;
struct LoraGradF32;
}  // namespace ot_cuda::kernels

extern "C" {
cudaError_t ot_cuda_rmsnorm_f32(const float* x, const float* w, float* y, float* inv_rms, int rows, int cols, float eps,
                                cudaStream_t stream);
cudaError_t ot_cuda_rmsnorm_backward_f32(const float* x, const float* w, const float* inv_rms, float eps,
                                         const float* d_out, float* dx, int accumulate, float* dw, int rows, int cols,
                                         cudaStream_t stream);
cudaError_t ot_cuda_rope_forward_f32(float* x, const std::int32_t* positions, const float* inv_freq, int n, int heads,
                                     int head_dim, int rot_half, float scale, cudaStream_t stream);
cudaError_t ot_cuda_rope_backward_f32(float* dy, const std::int32_t* positions, const float* inv_freq, int n, int heads,
                                      int head_dim, int rot_half, float scale, cudaStream_t stream);
cudaError_t ot_cuda_swiglu_forward_f32(const float* gate, const float* up, float* out, std::int64_t count,
                                       cudaStream_t stream);
cudaError_t ot_cuda_swiglu_backward_f32(const float* d_out, const float* gate, const float* up, float* d_gate,
                                        float* d_up, std::int64_t count, cudaStream_t stream);
cudaError_t ot_cuda_embedding_forward_f32(const std::int32_t* ids, const float* table, float* out, int n, int d,
                                          cudaStream_t stream);
cudaError_t ot_cuda_embedding_forward_bf16(const std::int32_t* ids, const std::uint16_t* table, float* out, int n,
                                           int d, cudaStream_t stream);
cudaError_t ot_cuda_embedding_backward_f32(const std::int32_t* ids, const float* d_out, float* d_table, int n, int d,
                                           cudaStream_t stream);
cudaError_t ot_cuda_adamw_step_f32(float* param, const float* grad, float* m, float* v, std::int64_t count, double lr,
                                   double beta1, double beta2, double eps, double weight_decay, std::int64_t step,
                                   double grad_scale, cudaStream_t stream);
cudaError_t ot_cuda_sum_of_squares_f32(const float* x, std::int64_t count, double* out, cudaStream_t stream);
cudaError_t ot_cuda_gemm_bf16_xwt(const std::uint16_t* x, const std::uint16_t* w, float* y, int m, int n, int k,
                                  cudaStream_t stream);
cudaError_t ot_cuda_gemm_bf16_backward_input(const std::uint16_t* dy, const std::uint16_t* w, float* dx, int m, int n,
                                             int k, cudaStream_t stream);
cudaError_t ot_cuda_gemm_bf16_backward_weight(const std::uint16_t* dy, const std::uint16_t* x, float* dw, int m, int n,
                                              int k, cudaStream_t stream);
cudaError_t ot_cuda_gemm_f32_xwt(const float* x, const float* w, float* y, int m, int n, int k, int accumulate,
                                 cudaStream_t stream);
cudaError_t ot_cuda_lora_forward_f32(const float* x, float* y, int n, int d_in, int d_out,
                                     const ot_cuda::kernels::LoraSegment* segments, int num_segments,
                                     const ot_cuda::kernels::LoraAdapterF32* adapters, int rank_stride,
                                     float* workspace, cudaStream_t stream);
cudaError_t ot_cuda_lora_backward_f32(const float* x, const float* dy, float* dx, int n, int d_in, int d_out,
                                      const ot_cuda::kernels::LoraSegment* segments, int num_segments,
                                      const ot_cuda::kernels::LoraAdapterF32* adapters,
                                      const ot_cuda::kernels::LoraGradF32* grads, int rank_stride, float* workspace,
                                      cudaStream_t stream);
cudaError_t ot_cuda_cache_write_f32(const float* k, const float* v, const std::int32_t* slot_mapping, int n_tokens,
                                    float* key_cache, float* value_cache, int num_blocks, int block_size,
                                    int num_kv_heads, int head_dim, cudaStream_t stream);
cudaError_t ot_cuda_paged_attention_f32(const float* q, float* out, int n_rows, const std::int32_t* row_seq,
                                        const std::int32_t* row_pos, const std::int32_t* block_tables,
                                        int max_blocks_per_seq, const float* key_cache, const float* value_cache,
                                        int block_size, int num_heads, int num_kv_heads, int head_dim, float scale,
                                        cudaStream_t stream);
cudaError_t ot_cuda_log_softmax_gather_f32(const float* logits, const std::int32_t* targets, float* logprobs,
                                           float* lse, int rows, int vocab, cudaStream_t stream);
cudaError_t ot_cuda_log_softmax_gather_backward_f32(const float* logits, const std::int32_t* targets, const float* lse,
                                                    const float* d_logprobs, float* d_logits, int rows, int vocab,
                                                    cudaStream_t stream);
cudaError_t ot_cuda_sample_rows_f32(const float* logits, int rows, int vocab, const std::int32_t* row_of, int draws,
                                    const double* temperatures, const std::int32_t* top_k, const double* top_p,
                                    const double* min_p, const double* uniforms, std::int32_t* tokens, double* logprobs,
                                    cudaStream_t stream);
cudaError_t ot_cuda_attention_forward_f32(const float* q, const float* kk, const float* v, float* out, float* lse,
                                          int n_tokens, const std::int32_t* seq_starts, int num_seqs, int num_heads,
                                          int num_kv_heads, int head_dim, float scale, cudaStream_t stream);
cudaError_t ot_cuda_attention_backward_f32(const float* q, const float* kk, const float* v, const float* out,
                                           const float* lse, const float* d_out, float* dq, float* dk, float* dv,
                                           int n_tokens, const std::int32_t* seq_starts, int num_seqs, int num_heads,
                                           int num_kv_heads, int head_dim, float scale, cudaStream_t stream);
cudaError_t ot_cuda_add_in_place_f32(float* target, const float* source, std::int64_t count, cudaStream_t stream);
cudaError_t ot_cuda_scale_f32(float* x, std::int64_t count, double factor, cudaStream_t stream);
cudaError_t ot_cuda_fill_f32(float* x, std::int64_t count, float value, cudaStream_t stream);
cudaError_t ot_cuda_fill_i32(std::int32_t* x, std::int64_t count, std::int32_t value, cudaStream_t stream);
cudaError_t ot_cuda_fill_f64(double* x, std::int64_t count, double value, cudaStream_t stream);
cudaError_t ot_cuda_add_bias_f32(float* y, const float* bias, int rows, int d, cudaStream_t stream);
cudaError_t ot_cuda_gather_rows_f32(const float* source, const std::int32_t* rows, int n, int d, float* out,
                                    cudaStream_t stream);
cudaError_t ot_cuda_scatter_rows_f32(float* target, const std::int32_t* rows, int n, int d, const float* source,
                                     cudaStream_t stream);
cudaError_t ot_cuda_copy_kv_blocks_f32(float* key_cache, float* value_cache, int block_size, int row,
                                       const std::int32_t* from, const std::int32_t* to, const std::int32_t* tokens,
                                       int num_copies, cudaStream_t stream);
cudaError_t ot_cuda_sum_rows_f32(const float* dy, int rows, int d, float* out, cudaStream_t stream);
cudaError_t ot_cuda_reference_kl_f32(const float* logits, const float* lse, const float* ref_logits,
                                     const float* ref_lse, const float* weights, int rows, int vocab, float* d_logits,
                                     double* out, cudaStream_t stream);
cudaError_t ot_cuda_unembed_logprobs_f32(const float* hidden, const float* w, const std::int32_t* targets,
                                         float* logprobs, float* lse, int n, int d, int vocab, float* workspace,
                                         cudaStream_t stream);
std::size_t ot_cuda_unembed_logprobs_f32_workspace_bytes(int n, int vocab);
cudaError_t ot_cuda_unembed_logprobs_backward_f32(const float* hidden, const float* w, const std::int32_t* targets,
                                                  const float* lse, const float* d_logprobs, float* d_hidden,
                                                  float* d_w, int n, int d, int vocab, cudaStream_t stream);
cudaError_t ot_cuda_score_rows_f32(const float* logits, int rows, int vocab, const std::int32_t* targets, int k,
                                   double* logprobs, std::int32_t* top_ids, double* top_logprobs, cudaStream_t stream);
cudaError_t ot_cuda_gemm_f32_backward_input(const float* dy, const float* w, float* dx, int m, int n, int k,
                                            int accumulate, cudaStream_t stream);
cudaError_t ot_cuda_gemm_f32_backward_weight(const float* dy, const float* x, float* dw, int m, int n, int k,
                                             int accumulate, cudaStream_t stream);
cudaError_t ot_cuda_convert_f32_to_bf16(const float* x, std::uint16_t* y, std::int64_t count, cudaStream_t stream);
cudaError_t ot_cuda_convert_f32_to_bf16_split(const float* x, std::uint16_t* hi, std::uint16_t* lo, std::int64_t count,
                                              cudaStream_t stream);
cudaError_t ot_cuda_convert_bf16_to_f32(const std::uint16_t* x, float* y, std::int64_t count, cudaStream_t stream);
cudaError_t ot_cuda_lora_rows_forward_f32(const float* x, float* y, int n, int d_in, int d_out,
                                          const std::int32_t* slots, const ot_cuda::kernels::LoraAdapterF32* adapters,
                                          int count, int rank_stride, float* workspace, cudaStream_t stream);
std::size_t ot_cuda_lora_rows_forward_f32_workspace_bytes(int n, int d_in, int rank_stride);
std::size_t ot_cuda_lora_rows_backward_f32_workspace_bytes(int n, int d_in, int d_out, int rank_stride);
cudaError_t ot_cuda_lora_rows_backward_f32(const float* x, const float* dy, float* dx, int n, int d_in, int d_out,
                                           const std::int32_t* slots, const ot_cuda::kernels::LoraAdapterF32* adapters,
                                           const ot_cuda::kernels::LoraGradF32* grads, int count, int rank_stride,
                                           float* workspace, cudaStream_t stream);
}
