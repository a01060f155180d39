// Splits a byte stream into newline-terminated lines as it arrives in reads of any size: a
// worker's record lines, some of them tens of megabytes (a case's samples).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace commbench {

class LineBuffer {
 public:
  // Appends `bytes` and moves every line it completes, without its newline, to `lines`. Only the
  // new bytes are searched (what was kept has no newline): a 40 MB line arrives in hundreds of
  // reads, and searching the whole buffer after each one took the agent a second per record.
  void feed(std::string_view bytes, std::vector<std::string>& lines) {
    const size_t scanned = partial_.size();
    partial_.append(bytes);
    size_t start = 0;
    for (size_t pos = partial_.find('\n', scanned); pos != std::string::npos; pos = partial_.find('\n', start)) {
      lines.emplace_back(partial_, start, pos - start);
      start = pos + 1;
    }
    partial_.erase(0, start);
  }
  // The bytes of a line not finished yet.
  const std::string& pending() const { return partial_; }

 private:
  std::string partial_;
};

}  // namespace commbench
