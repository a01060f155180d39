// GitHub-flavoured Markdown tables, shared by the summary.md sections.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace commbench {

// Text from the records (names, reasons) placed in Markdown: line breaks become spaces and a '<'
// that could open an HTML tag becomes "&lt;" (a renderer would run "<b>" or "<img ...>").
std::string markdown_text(std::string_view text);
// markdown_text, and table cells cannot hold '|'.
std::string markdown_cell(std::string_view text);
// `text` as one inline code span whatever backticks it holds (a longer fence, CommonMark).
std::string markdown_code(std::string_view text);

struct MarkdownColumn {
  std::string title;
  bool numeric;  // right-aligned
};

// Appends the table and a blank line. Cells are used as given (escape them with markdown_cell).
void append_markdown_table(std::string& md, const std::vector<MarkdownColumn>& columns,
                           const std::vector<std::vector<std::string>>& rows);

}  // namespace commbench
