#include "core/token_tree.h"

#include <cstdlib>

#include "core/error.h"

namespace speclab {

int64_t TreeShape::n_drafted() const {
  int64_t level = 1, total = 0;
  for (int b : branching) {
    level *= b;
    total += level;
  }
  return total;
}

std::string TreeShape::to_string() const {
  std::string s;
  for (size_t i = 0; i < branching.size(); i++) {
    if (i) s += "x";
    s += std::to_string(branching[i]);
  }
  return s + (mode == TreeMode::kTopK ? ":topk" : ":sample");
}

TreeShape tree_shape_parse(const std::string& text, const std::string& what) {
  TreeShape shape;
  std::string dims = text;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const std::string mode = text.substr(colon + 1);
    dims = text.substr(0, colon);
    if (mode == "topk") {
      shape.mode = TreeMode::kTopK;
    } else if (mode == "sample") {
      shape.mode = TreeMode::kSample;
    } else {
      fail_input(what, ": tree mode '", mode, "' (expected topk or sample)");
    }
  }
  size_t start = 0;
  while (true) {
    const size_t x = dims.find('x', start);
    const std::string part =
        dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    // Decimal digits only, no leading zero: strtol alone took " 2", "+2" and "02" too, one
    // tree under several spellings.
    const bool digits = !part.empty() && part.size() <= 3 && part[0] != '0' &&
                        part.find_first_not_of("0123456789") == std::string::npos;
    const long b = digits ? std::strtol(part.c_str(), nullptr, 10) : 0;
    SPECLAB_INPUT_CHECK(digits && b >= 1 && b <= kTreeMaxBranch, what, ": tree shape '", text,
                        "' (expected branching factors 1..", kTreeMaxBranch,
                        " joined by 'x', e.g. 3x2x1 or 2x2:sample)");
    shape.branching.push_back(static_cast<int>(b));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  SPECLAB_INPUT_CHECK(shape.depth() <= 16, what, ": tree shape '", text, "' is ", shape.depth(),
                      " levels deep (at most 16)");
  SPECLAB_INPUT_CHECK(shape.n_drafted() <= 256, what, ": tree shape '", text, "' drafts ",
                      shape.n_drafted(), " nodes (at most 256)");
  return shape;
}

}  // namespace speclab
