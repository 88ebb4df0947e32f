// Shared pieces of the libFuzzer targets (tests/fuzz/fuzz_*.cpp).
//
// The readers take paths (they mmap or libsentencepiece opens the file), so each iteration
// writes its input into a private directory on tmpfs (/dev/shm when present) and hands the
// reader that path. InputError is the expected outcome for malformed input; anything else
// (a crash, a sanitizer report, another exception escaping) is a bug the fuzzer reports.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace speclab {
namespace fuzz {

// One directory per process, made on first use and removed at exit.
inline const std::string& fuzz_dir() {
  static const std::string dir = [] {
    std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/speclab-fuzz-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    static std::string keep = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return tmpl;
  }();
  return dir;
}

inline std::string fuzz_write(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = fuzz_dir() + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

inline void fuzz_remove(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(fuzz_dir() + "/" + name, ec);
}

// Runs f; InputError is the expected way to reject an input. Its message must be one line
// (the CLI prints it as the one line on stderr), so a multi-line message aborts too.
template <typename F>
void fuzz_expect_ok_or_input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    if (msg.find('\n') != std::string::npos) {
      std::fprintf(stderr, "InputError message is not one line: %s\n", msg.c_str());
      std::abort();
    }
  }
}

}  // namespace fuzz
}  // namespace speclab
