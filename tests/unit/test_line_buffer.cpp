// The agent's split of a worker's record stream into lines, fed in reads of every size.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "agent/line_buffer.h"

namespace commbench {
namespace {

TEST(LineBuffer, LinesSplitAcrossReadsOfEverySizeComeOutWhole) {
  // Empty lines, one-byte lines, and a line far longer than any read.
  const std::vector<std::string> want = {"", "a", std::string(200000, 'x'), "", "{\"k\":1}", "b", ""};
  std::string stream;
  for (const std::string& line : want) stream += line + '\n';
  stream += "unfinished";
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{7}, size_t{4096}, size_t{65536}, stream.size()}) {
    LineBuffer buffer;
    std::vector<std::string> got;
    for (size_t at = 0; at < stream.size(); at += chunk) buffer.feed(std::string_view(stream).substr(at, chunk), got);
    EXPECT_EQ(got, want) << "reads of " << chunk << " bytes";
    EXPECT_EQ(buffer.pending(), "unfinished") << "reads of " << chunk << " bytes";
  }
}

TEST(LineBuffer, RandomReadSizesGiveTheSameLines) {
  std::mt19937 rng(7);
  std::vector<std::string> want;
  std::string stream;
  for (int i = 0; i < 300; ++i) {
    std::string line(std::uniform_int_distribution<size_t>(0, 3000)(rng), static_cast<char>('a' + i % 26));
    stream += line + '\n';
    want.push_back(std::move(line));
  }
  LineBuffer buffer;
  std::vector<std::string> got;
  for (size_t at = 0; at < stream.size();) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 5000)(rng);
    buffer.feed(std::string_view(stream).substr(at, n), got);
    at += n;
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(buffer.pending().empty());
}

}  // namespace
}  // namespace commbench
