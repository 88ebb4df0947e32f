// libFuzzer target: the JSON-lines readers of user files: prompt sets (prompt_set_load),
// result rows (results_read, as `merge` and `check --baseline` read them) and replay traces
// (trace_read_file). One input is one file given to all three.
#include <string>

#include "core/trace_simulator.h"
#include "experiments/config/prompt_set.h"
#include "experiments/results/results_store.h"
#include "tests/fuzz/fuzz_util.h"

using namespace speclab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::fuzz_write("input.jsonl", data, size);
  fuzz::fuzz_expect_ok_or_input_error([&] {
    for (const auto& p : prompt_set_load(path, 0)) (void)p.text.size();
  });
  fuzz::fuzz_expect_ok_or_input_error([&] {
    for (const auto& row : results_read(path)) (void)row.to_json().dump();
  });
  fuzz::fuzz_expect_ok_or_input_error([&] { (void)trace_read_file(path).size(); });
  return 0;
}
