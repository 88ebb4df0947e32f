// Markdown tables: a '|' inside a header or a cell ("median |err|") is escaped, so every line of
// the table has exactly as many cells as the header; without the escape the header of the
// prediction-quality table split into extra columns and every figure sat under the wrong name.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "experiments/results/table.h"

namespace speclab {
namespace {

// Cells of a Markdown table line: split at '|' not preceded by a backslash, outer bars dropped.
size_t markdown_cells(const std::string& line) {
  size_t bars = 0;
  for (size_t i = 0; i < line.size(); i++)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) bars++;
  return bars - 1;
}

TEST(TableMarkdown, PipesInsideCellsAreEscapedSoEveryLineHasTheHeadersCells) {
  Table t;
  t.title = "errors";
  t.headers = {"cells", "median |err|", "max |err|"};
  t.rows = {{"3", "+2.0%", "a|b"}, {"4", "-", "evil\nname\r|x"}};  // a break ended the row
  const std::string md = table_render(t, TableFormat::kMarkdown);
  std::istringstream in(md);
  std::string line;
  std::vector<std::string> table_lines;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '|') table_lines.push_back(line);
  ASSERT_EQ(table_lines.size(), 4u) << md;  // header, rule, two rows
  for (const std::string& l : table_lines) EXPECT_EQ(markdown_cells(l), 3u) << l;
  EXPECT_NE(md.find("| cells | median \\|err\\| | max \\|err\\| |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | +2.0% | a\\|b |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 | - | evil name \\|x |"), std::string::npos) << md;
  // The other formats keep the text as it is.
  EXPECT_NE(table_render(t, TableFormat::kCsv).find("cells,median |err|,max |err|"),
            std::string::npos);
}

}  // namespace
}  // namespace speclab
