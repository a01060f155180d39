#include "observe/host_files.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace commbench {
namespace {

// cpu2 < cpu10: compare digit runs by value.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

const std::string& host_root() {
  static const std::string root = [] {
    const char* v = std::getenv("COMMBENCH_SYSFS_ROOT");
    std::string r = v ? v : "";
    while (!r.empty() && r.back() == '/') r.pop_back();
    return r;
  }();
  return root;
}

std::string host_path(const std::string& absolute) { return host_root() + absolute; }

std::optional<std::string> read_host_file(const std::string& absolute) {
  std::ifstream in(host_path(absolute));
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::optional<double> read_host_number(const std::string& absolute) {
  auto text = read_host_file(absolute);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (end == text->c_str()) return std::nullopt;
  return v;
}

std::vector<std::string> list_host_dir(const std::string& absolute) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(host_path(absolute), ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end(), natural_less);
  return names;
}

std::string host_link_name(const std::string& absolute) {
  std::error_code ec;
  const auto target = std::filesystem::read_symlink(host_path(absolute), ec);
  return ec ? "" : target.filename().string();
}

}  // namespace commbench
