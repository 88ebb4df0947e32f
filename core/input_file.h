// Opening files named by the user (configs, prompts, traces, tokenizers, model files).
//
// A path given where a regular file is expected may name a FIFO (open() blocks forever), a
// character device such as /dev/zero (reads never end) or a directory. Every opener goes
// through input_file_open: it stat()s first, opens with O_NONBLOCK (so even a FIFO created
// between the stat and the open cannot block), checks the opened file again and refuses
// anything but a regular file with one line that says what the path is:
//   "prompts.jsonl: is a FIFO (named pipe), expected a regular file"
// input_file_read also bounds the size, before reading a byte and while it reads.
#pragma once

#include <cstdint>
#include <string>

namespace speclab {

// "a FIFO (named pipe)", "a character device", "a directory", ... for a stat st_mode.
std::string input_file_kind(unsigned mode);

// Opens a regular file read-only and returns its fd (the caller closes it) and size.
// `what` names the file in messages ("config file", "prompt file"). Throws InputError:
//   "<path>: cannot open <what> (no such file)" / "(<strerror>)"
//   "<path>: is a FIFO (named pipe), expected a regular file (<what>)"
int input_file_open(const std::string& path, const char* what, uint64_t* size);

// The whole content of a regular file of at most max_bytes (else an InputError naming the
// size and the limit), read to its end: a /proc or /sys file, whose stat size is 0, gives
// its content. An empty file gives "".
std::string input_file_read(const std::string& path, const char* what, uint64_t max_bytes);

// Reads bytes [0, n) of the open file `fd` into dst (n may exceed what one read() returns).
// Throws InputError "<path>: cannot read <what> at byte B (<strerror>)", or "<path>: <what>
// ends at byte B, N expected (the file changed while it was read)" when it is shorter.
void input_file_read_exactly(int fd, uint8_t* dst, uint64_t n, const std::string& path,
                             const char* what);

// Throws InputError unless `path` is a directory: "<path>: is a FIFO ..., expected a
// directory (<what>)" or "<path>: cannot open <what> (no such directory)".
void input_dir_require(const std::string& path, const char* what);

}  // namespace speclab
