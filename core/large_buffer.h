// Memory for large buffers that are streamed from DRAM: model weights and the read probe that
// measures the limit their streaming is compared with. Both must sit on the same kind of pages,
// or the limit measures a different memory system than the one the weights are read from
// (4 KB pages cost a TLB miss every 4 KB of a multi-GB stream; 2 MB pages one every 2 MB).
#pragma once

#include <cstddef>
#include <memory>

namespace speclab {

enum class PageSize {
  kSmall,  // the kernel's default 4 KB pages (MADV_NOHUGEPAGE)
  kHuge,   // transparent huge pages asked for (MADV_HUGEPAGE): 2 MB where the kernel allows
};

struct LargeBufferFree {
  void operator()(void* p) const;
};
using LargeBuffer = std::unique_ptr<void, LargeBufferFree>;

// `nbytes` (rounded up to 64 bytes, and to 2 MB when nbytes >= 2 MB) aligned to 64 bytes, or to
// 2 MB when nbytes >= 2 MB, with the page advice above for buffers of 2 MB or more. Pages are not
// touched here: the first writer places them. nullptr when the allocation fails.
LargeBuffer large_buffer_alloc(size_t nbytes, PageSize pages);
// The bytes large_buffer_alloc reserves for nbytes.
size_t large_buffer_rounded(size_t nbytes);

// The page size weights are given: kHuge, or kSmall when SPECLAB_NO_THP is set to anything (THP
// compaction can cost more than it saves on a VM).
PageSize weights_page_size();

const char* page_size_name(PageSize pages);  // "4k" or "thp"

// Whether the kernel grants transparent huge pages to memory advised MADV_HUGEPAGE: its
// /sys/kernel/mm/transparent_hugepage/enabled selects "always" or "madvise" (not "never", and
// not absent). `enabled_file` is that file (a parameter for tests).
bool huge_pages_granted(const char* enabled_file = "/sys/kernel/mm/transparent_hugepage/enabled");

}  // namespace speclab
