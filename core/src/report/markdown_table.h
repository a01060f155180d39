// GitHub-flavoured Markdown tables, shared by the summary.md sections.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace commbench {

// Table cells cannot hold '|' or line breaks.
std::string markdown_cell(std::string_view text);

struct MarkdownColumn {
  std::string title;
  bool numeric;  // right-aligned
};

// Appends the table and a blank line. Cells are used as given (escape them with markdown_cell).
void append_markdown_table(std::string& md, const std::vector<MarkdownColumn>& columns,
                           const std::vector<std::vector<std::string>>& rows);

}  // namespace commbench
