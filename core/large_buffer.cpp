#include "core/large_buffer.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace speclab {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

void LargeBufferFree::operator()(void* p) const { std::free(p); }

size_t large_buffer_rounded(size_t nbytes) {
  const size_t align = nbytes >= kHugePage ? kHugePage : 64;
  return (nbytes + align - 1) / align * align;
}

LargeBuffer large_buffer_alloc(size_t nbytes, PageSize pages) {
  const size_t align = nbytes >= kHugePage ? kHugePage : 64;
  const size_t rounded = large_buffer_rounded(nbytes);
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  if (p == nullptr) return LargeBuffer();
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  // Advice only: a kernel without THP ignores it (madvise fails and the pages stay 4 KB).
  if (align == kHugePage)
    madvise(p, rounded, pages == PageSize::kHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
  (void)pages;
#endif
  return LargeBuffer(p);
}

PageSize weights_page_size() {
  return std::getenv("SPECLAB_NO_THP") ? PageSize::kSmall : PageSize::kHuge;
}

const char* page_size_name(PageSize pages) { return pages == PageSize::kHuge ? "thp" : "4k"; }

bool huge_pages_granted(const char* enabled_file) {
  std::FILE* f = std::fopen(enabled_file, "r");
  if (f == nullptr) return false;
  char line[256] = {};
  const bool read = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  return read &&
         (std::strstr(line, "[always]") != nullptr || std::strstr(line, "[madvise]") != nullptr);
}

}  // namespace speclab
