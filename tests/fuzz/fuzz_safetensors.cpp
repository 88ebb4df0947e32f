// libFuzzer target: the safetensors reader (header JSON, offsets, dtypes) and the sharded
// index (model.safetensors.index.json).
//
// Input: either one safetensors file, or "<index json>\0SHARD\0<shard file>" which is
// written as model.safetensors.index.json plus model-00001-of-00001.safetensors.
// Special files sit beside them for the index to name: fifo.safetensors (a FIFO with no
// writer: opening it would block) and zero.safetensors (a link to /dev/zero).
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "models/formats/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

using namespace speclab;

static const char kSep[] = "\0SHARD\0";
static constexpr size_t kSepLen = sizeof(kSep) - 1;

static void touch_tensors(const std::vector<const TensorView*>& tensors) {
  // Read the first and last byte of every tensor: ASan flags a view outside the mapping.
  volatile uint8_t sink = 0;
  for (const TensorView* t : tensors) {
    if (t->nbytes == 0) continue;
    const uint8_t* p = static_cast<const uint8_t*>(t->data);
    sink ^= p[0];
    sink ^= p[t->nbytes - 1];
  }
  (void)sink;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mkfifo((fuzz::fuzz_dir() + "/fifo.safetensors").c_str(), 0600);
  symlink("/dev/zero", (fuzz::fuzz_dir() + "/zero.safetensors").c_str());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t sep = in.find(std::string(kSep, kSepLen));
  fuzz::fuzz_remove("model.safetensors");
  fuzz::fuzz_remove("model.safetensors.index.json");
  fuzz::fuzz_remove("model-00001-of-00001.safetensors");
  if (sep == std::string::npos) {
    const std::string path = fuzz::fuzz_write("model.safetensors", data, size);
    fuzz::fuzz_expect_ok_or_input_error([&] {
      auto file = SafetensorsFile::open(path);
      std::vector<const TensorView*> views;
      for (const TensorView& t : file->tensors()) views.push_back(&t);
      touch_tensors(views);
    });
  } else {
    fuzz::fuzz_write("model.safetensors.index.json", data, sep);
    fuzz::fuzz_write("model-00001-of-00001.safetensors", data + sep + kSepLen,
                     size - sep - kSepLen);
  }
  fuzz::fuzz_expect_ok_or_input_error([&] {
    auto set = SafetensorsSet::open_dir(fuzz::fuzz_dir());
    touch_tensors(set->all_tensors());
  });
  return 0;
}
