#include "report/markdown_table.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace commbench {

std::string markdown_text(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\n' || c == '\r')
      out += ' ';
    else if (c == '<' && (std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' || next == '?'))
      out += "&lt;";
    else
      out += c;
  }
  return out;
}

std::string markdown_cell(std::string_view text) {
  std::string out;
  for (char c : markdown_text(text)) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

std::string markdown_code(std::string_view text) {
  std::string flat;
  for (char c : text) flat += (c == '\n' || c == '\r') ? ' ' : c;
  size_t longest = 0, run = 0;
  for (char c : flat) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  // A space inside the fence when the text starts or ends with a backtick (CommonMark strips one).
  const bool pad = !flat.empty() && (flat.front() == '`' || flat.back() == '`');
  return fence + (pad ? " " : "") + flat + (pad ? " " : "") + fence;
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
