#include <cmath>

#include "core/cuda/cuda_block_reduce.cuh"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_sampling_top_set.h"
#include "core/cuda/cuda_top_set.h"

namespace speclab {
namespace {

static_assert(kCudaSamplingBlock % 32 == 0, "block reductions and the warps' tie counts");

// What every kernel of a call reads, by value.
struct TopSetArgs {
  const float* logits;  // [n_rows, vocab]
  const int32_t* best;  // [n_rows] the rows' argmax
  int64_t vocab;
  double inv_t;  // 1 / temperature
  double scale;  // 2^cuda_top_mass_shift(vocab): fixed-point masses
  float top_p;
  int top_k;
};

__device__ inline float row_max_logit(const TopSetArgs& a, int64_t row) {
  return a.logits[row * a.vocab + a.best[row]];
}

__device__ inline uint64_t fixed_weight_of_key(uint32_t key, float max_logit, const TopSetArgs& a) {
  return cuda_top_fixed(cuda_top_weight(cuda_top_key_logit(key), max_logit, a.inv_t), a.scale);
}

// One histogram pass of a selection: hist[row, b] += the count (top-k) or fixed-point mass
// (top-p) of chunk c's candidates in range whose digit `pass` is b. Integer atomics, so the
// sums do not depend on the order they land in.
//   grid (n_chunks, n_rows), block kCudaSamplingBlock; hist: [n_rows, 256], zero before the
//   pass; sel: [n_rows] this selection's states; k_sel: [n_rows] top-k's states when top-p
//   follows top-k, else null.
template <bool kMass>
__global__ void top_hist_kernel(unsigned long long* hist, const CudaTopSelect* sel,
                                const CudaTopSelect* k_sel, TopSetArgs a, int pass) {
  __shared__ unsigned long long bins[kCudaTopBuckets];
  for (int b = threadIdx.x; b < kCudaTopBuckets; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  const int64_t row = blockIdx.y, c = blockIdx.x;
  const CudaTopSelect s = sel[row];
  const uint32_t bound = cuda_top_p_key_bound(k_sel == nullptr ? nullptr : k_sel + row);
  const float* lr = a.logits + row * a.vocab;
  const float max_logit = row_max_logit(a, row);
  const int64_t end = min(a.vocab, (c + 1) * kCudaSamplingChunk);
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x) {
    const float l = lr[i];
    const uint32_t key = cuda_top_key(l);
    if (!cuda_top_in_range(key, s)) continue;
    if (kMass) {
      if (!cuda_top_p_histograms(key, bound)) continue;
      atomicAdd(&bins[cuda_top_digit(key, pass)],
                static_cast<unsigned long long>(
                    cuda_top_fixed(cuda_top_weight(l, max_logit, a.inv_t), a.scale)));
    } else {
      atomicAdd(&bins[cuda_top_digit(key, pass)], 1ull);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kCudaTopBuckets; b += blockDim.x)
    if (bins[b] != 0) atomicAdd(&hist[row * kCudaTopBuckets + b], bins[b]);
}

// The pass's pick, one block a row: the row's histogram into shared memory (the global one
// zeroed for the next pass), then one thread fixes the digit (cuda_top_pick: 256 buckets in
// order); the first pass sets the target, the last the take.
//   grid (n_rows), block kCudaTopBuckets
template <bool kMass>
__global__ void top_pick_kernel(unsigned long long* hist, CudaTopSelect* sel,
                                const CudaTopSelect* k_sel, TopSetArgs a, int pass) {
  __shared__ uint64_t h[kCudaTopBuckets];
  const int64_t row = blockIdx.x;
  h[threadIdx.x] = hist[row * kCudaTopBuckets + threadIdx.x];
  hist[row * kCudaTopBuckets + threadIdx.x] = 0;
  __syncthreads();
  if (threadIdx.x != 0) return;
  CudaTopSelect s = sel[row];
  const float max_logit = row_max_logit(a, row);
  if (kMass && k_sel != nullptr)
    cuda_top_p_add_top_k_ties(h, s, k_sel[row],
                              fixed_weight_of_key(k_sel[row].prefix, max_logit, a), pass);
  if (pass == 0) {
    uint64_t total = 0;
    for (int b = 0; b < kCudaTopBuckets; b++) total += h[b];
    s.target = kMass ? cuda_top_need(total, a.top_p) : static_cast<uint64_t>(a.top_k);
  }
  cuda_top_pick(&s, h, pass);
  if (pass == kCudaTopPasses - 1) {
    if (!kMass) {
      s.take = cuda_top_count_take(s);
    } else {
      s.take = cuda_top_mass_take(s, fixed_weight_of_key(s.prefix, max_logit, a));
      if (k_sel != nullptr && s.prefix == k_sel[row].prefix && k_sel[row].take < s.take)
        s.take = k_sel[row].take;
    }
  }
  sel[row] = s;
}

// tie_count[row, c] = the ids of chunk c whose key is the threshold T.
//   grid (n_chunks, n_rows), block kCudaSamplingBlock
__global__ void top_tie_count_kernel(uint32_t* tie_count, const CudaTopSelect* sel, TopSetArgs a) {
  __shared__ uint32_t shared[32];
  const int64_t row = blockIdx.y, c = blockIdx.x;
  const uint32_t t = sel[row].prefix;
  const float* lr = a.logits + row * a.vocab;
  const int64_t end = min(a.vocab, (c + 1) * kCudaSamplingChunk);
  uint32_t n = 0;
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x)
    n += cuda_top_key(lr[i]) == t ? 1u : 0u;
  n = cuda_block_sum(n, shared);
  if (threadIdx.x == 0) tie_count[row * gridDim.x + c] = n;
}

// probs[row, i] = 1 for the kept ids and 0 for the others (a mask the normalization turns into
// probabilities); psum[row, c] = chunk c's kept weights, in double, threads strided then warps
// in order. A tie's rank at T: the ties of the chunks before (tie_count, added in chunk order)
// and those before it in its chunk (tiles of one id a thread: warp ballots, warps in order).
//   grid (n_chunks, n_rows), block kCudaSamplingBlock
__global__ void top_mark_kernel(float* probs, double* psum, const uint32_t* tie_count,
                                const CudaTopSelect* sel, TopSetArgs a) {
  __shared__ uint32_t warp_ties[32];
  __shared__ double shared[32];
  const int64_t row = blockIdx.y, c = blockIdx.x, n_chunks = gridDim.x;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  const CudaTopSelect s = sel[row];
  uint64_t ties_before = 0;
  for (int64_t j = 0; j < c; j++) ties_before += tie_count[row * n_chunks + j];
  const float* lr = a.logits + row * a.vocab;
  float* pr = probs + row * a.vocab;
  const float max_logit = row_max_logit(a, row);
  const int64_t end = min(a.vocab, (c + 1) * kCudaSamplingChunk);
  double kept_weight = 0.0;
  // Every thread runs every tile (the bounds do not depend on the thread): the barriers match.
  for (int64_t base = c * kCudaSamplingChunk; base < end; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    const bool in = i < end;
    const float l = in ? lr[i] : 0.0f;
    const uint32_t key = cuda_top_key(l);
    const unsigned ballot = __ballot_sync(0xffffffffu, in && key == s.prefix);
    __syncthreads();  // the previous tile's counts are read
    if (lane == 0) warp_ties[warp] = __popc(ballot);
    __syncthreads();
    uint64_t rank = ties_before + __popc(ballot & ((1u << lane) - 1u));
    uint32_t tile_ties = 0;
    for (int w = 0; w < n_warps; w++) {
      if (w < warp) rank += warp_ties[w];
      tile_ties += warp_ties[w];
    }
    const bool kept = in && cuda_top_kept(key, rank, s);
    if (in) pr[i] = kept ? 1.0f : 0.0f;
    if (kept) kept_weight += cuda_top_weight(l, max_logit, a.inv_t);
    ties_before += tile_ties;
  }
  kept_weight = cuda_block_sum(kept_weight, shared);
  if (threadIdx.x == 0) psum[row * n_chunks + c] = kept_weight;
}

// probs[row, i] = weight_i / (the row's psum added in chunk order) where the mask is set, 0
// elsewhere; the weights recomputed (the same expression, so the same doubles).
//   grid (n_chunks, n_rows), block kCudaSamplingBlock
__global__ void top_normalize_kernel(float* probs, const double* psum, TopSetArgs a) {
  const int64_t row = blockIdx.y, c = blockIdx.x, n_chunks = gridDim.x;
  double total = 0.0;
  for (int64_t j = 0; j < n_chunks; j++) total += psum[row * n_chunks + j];
  const float* lr = a.logits + row * a.vocab;
  float* pr = probs + row * a.vocab;
  const float max_logit = row_max_logit(a, row);
  const int64_t end = min(a.vocab, (c + 1) * kCudaSamplingChunk);
  for (int64_t i = c * kCudaSamplingChunk + threadIdx.x; i < end; i += blockDim.x)
    if (pr[i] != 0.0f)
      pr[i] = static_cast<float>(cuda_top_weight(lr[i], max_logit, a.inv_t) / total);
}

// One selection (top-k: counts; top-p: masses, after top-k's states when given): four
// histogram passes, each followed by its pick.
template <bool kMass>
void select_top_set(unsigned long long* hist, CudaTopSelect* sel, const CudaTopSelect* after,
                    const TopSetArgs& a, dim3 rows_grid, unsigned row_blocks, cudaStream_t stream) {
  for (int pass = 0; pass < kCudaTopPasses; pass++) {
    top_hist_kernel<kMass><<<rows_grid, kCudaSamplingBlock, 0, stream>>>(hist, sel, after, a, pass);
    SPECLAB_CUDA_CHECK_LAUNCH("top_hist_kernel: bad launch configuration");
    top_pick_kernel<kMass><<<row_blocks, kCudaTopBuckets, 0, stream>>>(hist, sel, after, a, pass);
    SPECLAB_CUDA_CHECK_LAUNCH("top_pick_kernel: bad launch configuration");
  }
}

}  // namespace

void cuda_sampling_top_set(float* probs, const float* logits, const int32_t* best, int64_t n_rows,
                           int64_t vocab, const SamplingParams& sp, cudaStream_t stream) {
  const bool use_k = sp.top_k > 0 && sp.top_k < vocab;
  const bool use_p = sp.top_p < 1.0f;
  const int64_t n_chunks = cuda_sampling_chunks(vocab);
  const size_t rows = static_cast<size_t>(n_rows), parts = rows * static_cast<size_t>(n_chunks);
  // Scratch (cuda_top_set_scratch_bytes): hist [n_rows, 256], the top-k and top-p states
  // [n_rows] each, psum [n_rows, n_chunks], tie_count [n_rows, n_chunks].
  uint8_t* scratch = nullptr;
  SPECLAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch),
                                     cuda_top_set_scratch_bytes(n_rows, vocab), stream),
                     "device out of memory (top-k / top-p selection)");
  auto* hist = reinterpret_cast<unsigned long long*>(scratch);
  auto* k_sel = reinterpret_cast<CudaTopSelect*>(hist + rows * kCudaTopBuckets);
  CudaTopSelect* p_sel = k_sel + rows;
  auto* psum = reinterpret_cast<double*>(p_sel + rows);
  auto* tie_count = reinterpret_cast<uint32_t*>(psum + parts);
  // Histograms and states start at zero; each pick zeroes its histogram for the next pass.
  SPECLAB_CUDA_CHECK(
      cudaMemsetAsync(scratch, 0, reinterpret_cast<uint8_t*>(psum) - scratch, stream),
      "top-k / top-p scratch clear failed");

  TopSetArgs a;
  a.logits = logits;
  a.best = best;
  a.vocab = vocab;
  a.inv_t = 1.0 / static_cast<double>(sp.temperature);
  a.scale = std::ldexp(1.0, cuda_top_mass_shift(vocab));
  a.top_p = sp.top_p;
  a.top_k = sp.top_k;
  const dim3 rows_grid(static_cast<unsigned>(n_chunks), static_cast<unsigned>(n_rows));
  const unsigned row_blocks = static_cast<unsigned>(n_rows);
  if (use_k) select_top_set<false>(hist, k_sel, nullptr, a, rows_grid, row_blocks, stream);
  if (use_p)
    select_top_set<true>(hist, p_sel, use_k ? k_sel : nullptr, a, rows_grid, row_blocks, stream);
  const CudaTopSelect* fin = use_p ? p_sel : k_sel;
  top_tie_count_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(tie_count, fin, a);
  SPECLAB_CUDA_CHECK_LAUNCH("top_tie_count_kernel: bad launch configuration");
  top_mark_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(probs, psum, tie_count, fin, a);
  SPECLAB_CUDA_CHECK_LAUNCH("top_mark_kernel: bad launch configuration");
  top_normalize_kernel<<<rows_grid, kCudaSamplingBlock, 0, stream>>>(probs, psum, a);
  SPECLAB_CUDA_CHECK_LAUNCH("top_normalize_kernel: bad launch configuration");
  SPECLAB_CUDA_CHECK(cudaFreeAsync(scratch, stream), "top-k / top-p scratch free failed");
}

}  // namespace speclab
