// Errors at the edges of the program.
//
// InputError: the user gave us something bad (a config, a model file, an argument).
// The CLI prints what() as one line on stderr and exits with code 2. The message
// names the file, the key or offset, and what was expected, e.g.
//   "model.safetensors: tensor 'lm_head.weight' data offsets [10, 99999] lie outside the file (8200
//   bytes)"
//
// CheckFailed: a check the user asked for failed (a regression gate, a statistical
// test). Exit code 1.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace speclab {

namespace detail {
// Messages quote names taken from the bad input (GGUF keys, tensor names, protobuf errors),
// which may hold newlines or other control bytes: escape them (\n, \xNN) so the message
// stays the one line on stderr that the CLI contract promises. Found by fuzzing (issue 8).
inline std::string one_line(const std::string& msg) {
  std::string out;
  out.reserve(msg.size());
  for (const char ch : msg) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}
}  // namespace detail

struct InputError : std::runtime_error {
  explicit InputError(const std::string& msg) : std::runtime_error(detail::one_line(msg)) {}
};

struct CheckFailed : std::runtime_error {
  explicit CheckFailed(const std::string& msg) : std::runtime_error(msg) {}
};

// The user interrupted a run (SIGINT) after complete results were written. Exit code 130.
struct Interrupted : std::runtime_error {
  explicit Interrupted(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
inline void format_into(std::ostringstream&) {}
template <typename T, typename... Rest>
void format_into(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  format_into(os, rest...);
}
}  // namespace detail

// Concatenates its arguments with operator<<: str_cat("offset ", 12, " > ", n).
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::format_into(os, args...);
  return os.str();
}

// Throws InputError with the concatenated message.
template <typename... Args>
[[noreturn]] void fail_input(const Args&... args) {
  throw InputError(str_cat(args...));
}

}  // namespace speclab

// Bad-input check: SPECLAB_INPUT_CHECK(n <= limit, path, ": tensor count ", n, " exceeds ", limit);
#define SPECLAB_INPUT_CHECK(cond, ...)               \
  do {                                               \
    if (!(cond)) ::speclab::fail_input(__VA_ARGS__); \
  } while (0)

// Internal invariant: a bug in speclab, not in the input. Aborts with file:line.
#define SPECLAB_ASSERT(cond)                                    \
  do {                                                          \
    if (!(cond)) {                                              \
      ::speclab::detail_assert_fail(#cond, __FILE__, __LINE__); \
    }                                                           \
  } while (0)

namespace speclab {
[[noreturn]] void detail_assert_fail(const char* cond, const char* file, int line);
}
