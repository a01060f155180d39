#include "report/markdown_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace commbench {

std::string markdown_cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

void append_markdown_table(std::string& md, const std::vector<MarkdownColumn>& columns,
                           const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::string> titles, rules;
  for (const auto& c : columns) {
    titles.push_back(markdown_cell(c.title));
    rules.push_back(c.numeric ? "---:" : "---");
  }
  md += fmt::format("| {} |\n|{}|\n", fmt::join(titles, " | "), fmt::join(rules, "|"));
  for (const auto& row : rows) md += fmt::format("| {} |\n", fmt::join(row, " | "));
  md += "\n";
}

}  // namespace commbench
