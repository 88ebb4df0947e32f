// libFuzzer target: the strict YAML experiment loader (parse, typed structs, ${VAR}
// expansion, path resolution, validate()), plus a --set override taken from the input's
// first line when it starts with "#set ".
#include <string>
#include <vector>

#include "experiments/config/experiment_config.h"
#include "tests/fuzz/fuzz_util.h"

using namespace speclab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (in.rfind("#set ", 0) == 0) {
    const size_t eol = in.find('\n');
    overrides.push_back(in.substr(5, eol == std::string::npos ? std::string::npos : eol - 5));
  }
  const std::string path = fuzz::fuzz_write("experiment.yaml", data, size);
  fuzz::fuzz_expect_ok_or_input_error([&] {
    ExperimentConfig config = experiment_config_load(path, overrides);
    config.to_json().dump();
    config.config_hash();
  });
  return 0;
}
