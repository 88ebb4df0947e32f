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
// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or 0 when the bytes there are not one.
inline size_t utf8_sequence_length(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return 0;
  }
  return n;
}

// Messages quote names taken from the bad input (GGUF keys, tensor names, protobuf errors,
// argument values), which may hold newlines, other control bytes or bytes that are not
// UTF-8: escape them (\n, \xNN) so the message stays the one printable line on stderr that
// the CLI contract promises. Valid UTF-8 (names in other scripts) is kept as it is.
inline std::string one_line(const std::string& msg) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(msg.size());
  for (size_t i = 0; i < msg.size();) {
    const unsigned char c = static_cast<unsigned char>(msg[i]);
    const size_t n = utf8_sequence_length(msg, i);
    if (c == '\n') {
      out += "\\n";
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out.append(msg, i, n);
      i += n;
      continue;
    }
    ++i;
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

// The user interrupted a run after complete results were written: exit code 128 + the
// signal, as a shell reports a process killed by it (130 for SIGINT, 143 for SIGTERM).
struct Interrupted : std::runtime_error {
  explicit Interrupted(const std::string& msg, int exit_code = 130)
      : std::runtime_error(msg), exit_code(exit_code) {}
  int exit_code;
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
