// Host glue of device verification: argument checks and decoding of the result record.
#include <gtest/gtest.h>

#include <string>

#include "core/cuda/cuda_verify_result.h"
#include "core/error.h"

namespace speclab {
namespace {

TEST(CudaVerifyResult, DecodesHeaderAndDiagnostics) {
  int32_t header[kCudaVerifyHeader] = {};
  header[kVfStatus] = kCudaVerifyOk;
  header[kVfAccepted] = 2;
  header[kVfNext] = 41;
  header[kVfBonus] = 0;
  const float diag[9] = {0.5f, 0.6f, 0.1f, 0.7f, 0.8f, 0.9f, 0.4f, 0.5f, 0.05f};  // [3, 3]
  const VerifyOutcome o = cuda_verify_decode(header, diag, 3);
  EXPECT_EQ(o.n_accepted, 2);
  EXPECT_EQ(o.next_token, 41);
  EXPECT_FALSE(o.bonus);
  EXPECT_EQ(o.p_draft, (std::vector<float>{0.5f, 0.6f, 0.1f}));
  EXPECT_EQ(o.q_draft, (std::vector<float>{0.7f, 0.8f, 0.9f}));
  EXPECT_EQ(o.beta, (std::vector<float>{0.4f, 0.5f, 0.05f}));
  EXPECT_EQ(cuda_verify_diag_floats(3), 9u);
}

TEST(CudaVerifyResult, BonusRoundWithNoDrafts) {
  int32_t header[kCudaVerifyHeader] = {kCudaVerifyOk, 0, 0, 7, 1};
  const VerifyOutcome o = cuda_verify_decode(header, nullptr, 0);
  EXPECT_TRUE(o.bonus);
  EXPECT_EQ(o.next_token, 7);
  EXPECT_TRUE(o.p_draft.empty());
}

TEST(CudaVerifyResult, DeviceStatusBecomesTheCpuMessage) {
  const int32_t draft[2] = {5, 99};
  int32_t header[kCudaVerifyHeader] = {kCudaVerifyDraftQZero, 1, 0, 0, 0};
  float diag[6] = {};
  try {
    cuda_verify_decode(header, diag, 2, draft);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "speculative_verify: draft[1] = 99 has q = 0 at its position; it cannot have been "
              "sampled from q");
  }
  header[kVfStatus] = kCudaVerifyDraftOutOfRange;
  EXPECT_THROW(cuda_verify_decode(header, diag, 2, draft), InputError);
  header[kVfStatus] = kCudaVerifyAllZero;
  EXPECT_THROW(cuda_verify_decode(header, diag, 2), InputError);
  header[kVfStatus] = 77;
  EXPECT_THROW(cuda_verify_decode(header, diag, 2), InputError);
}

TEST(CudaVerifyResult, ArgumentChecksMatchTheCpuVerifier) {
  VerifyConfig cfg;
  EXPECT_NO_THROW(cuda_verify_check_args(3, 10, true, true, cfg));
  EXPECT_NO_THROW(cuda_verify_check_args(0, 10, true, false, cfg));
  EXPECT_THROW(cuda_verify_check_args(-1, 10, true, true, cfg), InputError);
  EXPECT_THROW(cuda_verify_check_args(3, 0, true, true, cfg), InputError);
  EXPECT_THROW(cuda_verify_check_args(3, 10, false, true, cfg), InputError);
  EXPECT_THROW(cuda_verify_check_args(3, 10, true, false, cfg), InputError);
  cfg.lenience = 0.0;
  EXPECT_THROW(cuda_verify_check_args(3, 10, true, true, cfg), InputError);
  cfg.lenience = 1.5;
  EXPECT_THROW(cuda_verify_check_args(3, 10, true, true, cfg), InputError);
}

}  // namespace
}  // namespace speclab
