#include "models/llama/cuda/cuda_llama_runner.h"

#include <algorithm>

#include "core/cuda/cuda_attention.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/cuda_device.h"
#include "core/cuda/cuda_draft_sample.h"
#include "core/cuda/cuda_launch_config.h"
#include "core/cuda/cuda_matmul.h"
#include "core/cuda/cuda_matmul_swiglu.h"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/cuda_rope_kv.h"
#include "core/cuda/cuda_sampling.h"
#include "core/cuda/cuda_verify.h"
#include "core/cuda/cuda_verify_result.h"
#include "core/error.h"

namespace speclab {
CudaLlamaRunner::CudaLlamaRunner(const LlamaModel& model, int64_t max_ctx,
                                 std::vector<bool> skip_layers)
    : config_(model.config),
      skip_layers_(std::move(skip_layers)),
      graph_book_(CudaGraphPolicy{cuda_graphs_from_env()}) {
  cuda_bf16_vec_token_limit();  // a bad SPECLAB_CUDA_VEC_TOKENS fails here, before any work
  const LlamaConfig& c = config_;
  const int64_t ctx = token_runner_check_setup(model, max_ctx, &skip_layers_);
  kv_ = kv_cache_book_make(ctx, c.n_kv_heads, c.head_dim);

  cuda_keep_stream_ordered_memory();  // per-step scratch reuses pool memory
  SPECLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                     "no CUDA device? see speclab_cuda_device_info()");
  w_ = cuda_llama_weights_upload(model, skip_layers_);
  caches_.resize(c.n_layers);
  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers_[l]) continue;
    caches_[l].key_cache.resize(kv_.layer_floats());  // left uninitialized, like the CPU
    caches_[l].value_cache.resize(kv_.layer_floats());
  }
}

CudaLlamaRunner::~CudaLlamaRunner() {
  if (stream_) {
    cudaStreamSynchronize(stream_);  // no graph or kernel may still read the buffers
    graphs_.clear();
    cudaStreamDestroy(stream_);
  }
}

void CudaLlamaRunner::set_cuda_graphs(bool on) {
  if (!on && !graphs_.empty()) {
    SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream_), "a previous forward failed");
    graphs_.clear();
    graph_book_.invalidate();
  }
  graph_book_.set_enabled(on);
}

void CudaLlamaRunner::ensure_batch_capacity(int64_t n) {
  if (n <= batch_capacity_) return;
  const LlamaConfig& c = config_;
  const int64_t q_dim = c.n_heads * c.head_dim;
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream_), "a previous forward failed");
  // The graphs captured the old buffers' addresses.
  graphs_.clear();
  graph_book_.invalidate();
  step_.resize(1 + n);
  x_.resize(n * c.dim);
  xb_.resize(n * c.dim);
  xb2_.resize(n * c.dim);
  q_.resize(n * q_dim);
  k_cur_.resize(n * kv_.kv_dim());
  v_cur_.resize(n * kv_.kv_dim());
  att_.resize(n * q_dim);
  scores_.resize(std::min(n, graph_book_.policy().max_tokens) * c.n_heads * kv_.max_ctx);
  hb_.resize(n * c.hidden_dim);
  hb2_.resize(n * c.hidden_dim);
  logits_.resize(n * c.vocab_size);
  batch_capacity_ = n;
}

const float* CudaLlamaRunner::forward_device(const int32_t* tokens, int64_t n_tokens,
                                             bool last_only) {
  kv_.check_append(tokens, n_tokens, config_.vocab_size);
  ensure_batch_capacity(n_tokens);
  // What changes between steps of one shape, in one copy: [n_past, ids...]. Stream-ordered
  // after the previous step, so a graph still reading step_ is not overwritten early.
  step_host_.resize(static_cast<size_t>(1 + n_tokens));
  step_host_[0] = static_cast<int32_t>(kv_.n_past);
  std::copy(tokens, tokens + n_tokens, step_host_.begin() + 1);
  step_.upload(step_host_.data(), step_host_.size(), stream_);
  return run_step(n_tokens, last_only);
}

const float* CudaLlamaRunner::run_step(int64_t n_tokens, bool last_only) {
  if (timeline_ != nullptr) {  // timed kernel by kernel: plain launches, no graph counted
    timeline_->begin(stream_);
    enqueue_forward(n_tokens, last_only);
    timeline_->end();
    kv_.commit_linear(n_tokens);
    return logits_.data();
  }
  const CudaGraphKey key{n_tokens, last_only};
  switch (graph_book_.next(key)) {
    case CudaGraphAction::kPlain:
      enqueue_forward(n_tokens, last_only);
      break;
    case CudaGraphAction::kCapture:
      try {
        CudaGraphExec g = CudaGraphExec::capture(
            stream_, [this, n_tokens, last_only] { enqueue_forward(n_tokens, last_only); });
        g.launch(stream_);
        graphs_[key] = std::move(g);
        graph_book_.captured(key);
      } catch (const CudaError& e) {
        // Nothing of the capture ran: this step runs plain, the shape stays plain.
        graph_failure_ = e.what();
        graph_book_.capture_failed(key);
        enqueue_forward(n_tokens, last_only);
      }
      break;
    case CudaGraphAction::kReplay:
      graphs_.at(key).launch(stream_);
      break;
  }
  kv_.commit_linear(n_tokens);
  return logits_.data();
}

void CudaLlamaRunner::enqueue_forward(int64_t n_tokens, bool last_only) {
  const LlamaConfig& c = config_;
  cudaStream_t s = stream_;
  const int64_t dim = c.dim;
  float* x = x_.data();
  const int32_t* d_n_past = step_.data();      // [1]
  const int32_t* d_tokens = step_.data() + 1;  // [n_tokens]
  CudaRopeKvShape rope;
  rope.n_tokens = n_tokens;
  rope.n_heads = c.n_heads;
  rope.n_kv_heads = c.n_kv_heads;
  rope.head_dim = c.head_dim;
  rope.interleaved = w_.rope_interleaved;
  // Attention scores: the runner's buffer (stride max_ctx) for the shapes a graph may
  // capture; a long prefill (never captured) takes a stream-ordered one of stride
  // n_past + n_tokens, as large as it needs and no larger.
  float* scores = scores_.data();
  int64_t score_stride = kv_.max_ctx;
  const bool own_scores = n_tokens > graph_book_.policy().max_tokens;
  if (own_scores) {
    score_stride = kv_.n_past + n_tokens;
    SPECLAB_CUDA_CHECK(
        cudaMallocAsync(reinterpret_cast<void**>(&scores),
                        cuda_attention_scratch_bytes(n_tokens, c.n_heads, kv_.n_past), s),
        "device out of memory (attention scores): lower max_ctx");
  }

  // With a timeline (set_kernel_timeline), the device time before each mark goes to its label.
  auto mark = [this, s](const char* label) {
    if (timeline_ != nullptr) timeline_->mark(label, s);
  };
  cuda_embedding_lookup(x, d_tokens, w_.tok_embeddings.view(), n_tokens, s);
  mark("embedding");

  for (int64_t l = 0; l < c.n_layers; l++) {
    if (skip_layers_[l]) continue;
    const CudaLlamaLayerWeights& lw = w_.layers[l];
    LayerCache& kv = caches_[l];

    // Attention sublayer: x += wo · attention(rope(wq·xb), rope(wk·xb), wv·xb). K and V go
    // to scratch rows; cuda_rope_kv_write rotates q and k and writes K/V to cache rows
    // n_past + t, reading n_past from step_. Launches per layer with BF16 weights and at most
    // 8 tokens (the fused paths): norm, QKV, rope + KV write, attention, wo + add, norm,
    // gate-up-SwiGLU, down + add = 8, down from 15; otherwise each fusion falls back to its
    // unfused launches.
    cuda_rmsnorm(xb_.data(), x, lw.attn_norm.data(), n_tokens, dim, c.rms_norm_eps, s);
    mark("attn_norm");
    float* const qkv_out[3] = {q_.data(), k_cur_.data(), v_cur_.data()};
    const CudaWeightView qkv_w[3] = {lw.wq.view(), lw.wk.view(), lw.wv.view()};
    cuda_matmul_weights3(qkv_out, xb_.data(), qkv_w, n_tokens, s);  // one launch in BF16
    mark("qkv");
    cuda_rope_kv_write(q_.data(), k_cur_.data(), v_cur_.data(), kv.key_cache.data(),
                       kv.value_cache.data(), d_n_past, w_.inv_freq.data(), rope, s);
    mark("rope_kv");
    cuda_attention_at(att_.data(), q_.data(), kv.key_cache.data(), kv.value_cache.data(), n_tokens,
                      d_n_past, c.n_heads, c.n_kv_heads, c.head_dim, scores, score_stride, s);
    mark("attention");
    cuda_matmul_weights_add(x, att_.data(), lw.wo.view(), n_tokens, xb2_.data(), s);
    mark("wo_add");

    // MLP sublayer: x += w_down · (silu(w_gate·xb) * (w_up·xb)), the first half one fused
    // launch where the BF16 kernel serves it (cuda_matmul_swiglu).
    cuda_rmsnorm(xb_.data(), x, lw.ffn_norm.data(), n_tokens, dim, c.rms_norm_eps, s);
    mark("ffn_norm");
    cuda_matmul_swiglu(hb_.data(), xb_.data(), lw.w_gate.view(), lw.w_up.view(), hb2_.data(),
                       n_tokens, s);
    mark("gate_up");
    cuda_matmul_weights_add(x, hb_.data(), lw.w_down.view(), n_tokens, xb2_.data(), s);
    mark("down_add");
  }
  if (own_scores) {
    SPECLAB_CUDA_CHECK(cudaFreeAsync(scores, s), "attention scratch free failed");
  }

  // Final norm and the output head, over all tokens or only the last one.
  const int64_t n_rows = last_only ? 1 : n_tokens;
  const float* head_in = x + (n_tokens - n_rows) * dim;
  cuda_rmsnorm(xb_.data(), head_in, w_.final_norm.data(), n_rows, dim, c.rms_norm_eps, s);
  mark("final_norm");
  cuda_matmul_weights(logits_.data(), xb_.data(), w_.head(), n_rows, s);
  mark("head");
}

const float* CudaLlamaRunner::forward(const int32_t* tokens, int64_t n_tokens, bool last_only) {
  const float* d_logits = forward_device(tokens, n_tokens, last_only);
  const size_t n = static_cast<size_t>(last_only ? 1 : n_tokens) * config_.vocab_size;
  if (logits_host_.size() < n) logits_host_.resize(n);
  SPECLAB_CUDA_CHECK(cudaMemcpyAsync(logits_host_.data(), d_logits, n * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_),
                     "logits copy failed");
  SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream_), "a kernel of the forward pass failed");
  return logits_host_.data();
}

bool CudaLlamaRunner::verify_on_device(const int32_t* batch, int n_draft, const DraftRows& q,
                                       const SamplingParams& sampling, const VerifyConfig& config,
                                       RngKey base, VerifyOutcome* out) {
  // Greedy lenience (paper A.5) needs the raw softmax beside the one-hot p, which this
  // round does not compute: the host path handles it.
  if (config.greedy && config.lenience < 1.0) return false;
  const int64_t vocab = config_.vocab_size;
  const int64_t n_rows = n_draft + 1;
  // Host checks before any device work (same messages as the host path).
  cuda_verify_check_args(n_draft, vocab, true, batch != nullptr, config);
  sampling_validate(sampling);
  const float* d_logits = forward_device(batch, n_rows);  // [n_rows, vocab], device
  probs_.resize(static_cast<size_t>(n_rows * vocab));
  cuda_sampling_standardize(probs_.data(), d_logits, n_rows, vocab, sampling, stream_);
  CudaVerifyRound round;
  round.n_draft = n_draft;
  round.draft = step_.data() + 2;  // step_ = [n_past, last, d_1..d_n]
  round.p = probs_.data();
  round.vocab = vocab;
  round.draft_host = batch + 1;
  if (q.device != nullptr && n_draft > 0) {
    // The draft runner's rows, read in place. Its stream is another one: no event is needed
    // because its draft_on_device synchronized that stream to hand the last id to the host,
    // so every row was written before this call was made; and cuda_speculative_verify
    // synchronizes this stream, so the rows are read before the drafter's next round
    // overwrites them.
    round.q = q.device;
  } else if (q.host != nullptr && n_draft > 0) {
    draft_q_.upload(q.host, static_cast<size_t>(n_draft * vocab), stream_);
    round.q = draft_q_.data();
  }
  *out = cuda_speculative_verify(round, config, base, stream_);
  return true;
}

void CudaLlamaRunner::ensure_draft_rows(int n_rows) {
  const size_t vocab = static_cast<size_t>(config_.vocab_size);
  const size_t need = static_cast<size_t>(n_rows) * vocab;
  if (draft_rows_.size() >= need) return;
  // Grows keeping the rows already drafted this round (CudaBuffer::resize would drop them).
  CudaBuffer<float> grown(std::max({need, 2 * draft_rows_.size(), 8 * vocab}));
  if (draft_rows_.size() > 0) {
    SPECLAB_CUDA_CHECK(
        cudaMemcpyAsync(grown.data(), draft_rows_.data(), draft_rows_.size() * sizeof(float),
                        cudaMemcpyDeviceToDevice, stream_),
        "draft rows copy failed");
    SPECLAB_CUDA_CHECK(cudaStreamSynchronize(stream_), "draft rows copy failed");
  }
  draft_rows_ = std::move(grown);
}

bool CudaLlamaRunner::draft_on_device(const int32_t* tokens, int64_t n_tokens, int row,
                                      const SamplingParams& sampling, double u, DraftStep* out) {
  // Host checks before any device work; forward_device checks the tokens (KvCacheBook).
  sampling_validate(sampling);
  SPECLAB_INPUT_CHECK(row >= 0, "draft_on_device: row ", row, " (expected >= 0)");
  SPECLAB_INPUT_CHECK(u >= 0.0 && u < 1.0, "draft_on_device: u must lie in [0, 1), got ", u);
  const int64_t vocab = config_.vocab_size;
  ensure_draft_rows(row + 1);
  const float* d_logits = forward_device(tokens, n_tokens, /*last_only=*/true);  // [1, vocab]
  float* q_row = draft_rows_.data() + static_cast<int64_t>(row) * vocab;
  cuda_sampling_standardize(q_row, d_logits, 1, vocab, sampling, stream_);
  const CudaDraftSample s = cuda_draft_sample(q_row, vocab, u, stream_);  // synchronizes
  n_draft_rows_ = row + 1;
  out->token = s.token;
  out->top_prob = s.top_prob;
  out->entropy_norm = s.entropy_norm;
  out->q_rows = draft_rows_.data();
  return true;
}

bool CudaLlamaRunner::draft_chain_on_device(const int32_t* tokens, int64_t n_tokens, int k,
                                            const SamplingParams& sampling, const double* u,
                                            DraftStep* out) {
  // Host checks before any device work: the sampling, every uniform, the tokens and the room
  // for all k positions (the chained steps' ids are drawn on the device, in range).
  sampling_validate(sampling);
  SPECLAB_INPUT_CHECK(k >= 2, "draft_chain_on_device: k = ", k, " (expected >= 2)");
  for (int i = 0; i < k; i++) {
    SPECLAB_INPUT_CHECK(u[i] >= 0.0 && u[i] < 1.0, "draft_chain_on_device: u[", i,
                        "] must lie in [0, 1), got ", u[i]);
  }
  kv_.check_append(tokens, n_tokens, config_.vocab_size);
  SPECLAB_INPUT_CHECK(kv_.n_past + n_tokens + (k - 1) <= kv_.max_ctx, "context of ",
                      kv_.n_past + n_tokens + (k - 1), " tokens exceeds the limit ", kv_.max_ctx);
  const int64_t vocab = config_.vocab_size;
  ensure_draft_rows(k);
  chain_records_.resize(static_cast<size_t>(k));
  const float* d_logits = forward_device(tokens, n_tokens, /*last_only=*/true);  // [1, vocab]
  for (int i = 0; i < k; i++) {
    float* q_row = draft_rows_.data() + static_cast<int64_t>(i) * vocab;
    cuda_sampling_standardize(q_row, d_logits, 1, vocab, sampling, stream_);
    // Step i's draw becomes step i + 1's input: step_ = [n_past, id], n_past advanced by the
    // tokens step i ran. Stream order: step i's pass has read step_ before the draw writes it.
    const bool last = i + 1 == k;
    cuda_draft_sample_async(chain_records_.data() + i, last ? nullptr : step_.data(),
                            static_cast<int32_t>(i == 0 ? n_tokens : 1), q_row, vocab, u[i],
                            stream_);
    if (!last) d_logits = run_step(1, /*last_only=*/true);
  }
  std::vector<CudaDraftSample> records(static_cast<size_t>(k));
  chain_records_.download(records.data(), records.size(), stream_);  // the chain's one wait
  n_draft_rows_ = k;
  for (int i = 0; i < k; i++) {
    const CudaDraftSample& r = records[static_cast<size_t>(i)];
    SPECLAB_INPUT_CHECK(r.token >= 0, "cuda_draft_sample: all ", vocab, " weights are zero");
    out[i].token = r.token;
    out[i].top_prob = r.top_prob;
    out[i].entropy_norm = r.entropy_norm;
    out[i].q_rows = draft_rows_.data();
  }
  return true;
}

void CudaLlamaRunner::download_draft_rows(int n_rows, float* host) {
  const size_t n = static_cast<size_t>(n_rows) * static_cast<size_t>(config_.vocab_size);
  SPECLAB_INPUT_CHECK(n_rows >= 0 && n_rows <= n_draft_rows_, "download_draft_rows: ", n_rows,
                      " rows requested, ", n_draft_rows_, " drafted");
  if (n > 0) draft_rows_.download(host, n, stream_);
}

}  // namespace speclab
