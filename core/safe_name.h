// Names that become parts of file names and table rows (experiment names, drafter names, cell
// ids, config hashes, prompt categories): 1..max_len characters of [A-Za-z0-9._-], and neither
// "." nor ".." (which would name a folder above the one meant: results/../).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

namespace speclab {

// `extra`: characters allowed besides these (drafter names may hold '+': skip-4-5+9-10).
inline bool safe_name(const std::string& s, size_t max_len, const char* extra = "") {
  if (s.empty() || s.size() > max_len || s == "." || s == "..") return false;
  for (const char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-' ||
                    (ch != '\0' && std::strchr(extra, ch) != nullptr);
    if (!ok) return false;
  }
  return true;
}

}  // namespace speclab
