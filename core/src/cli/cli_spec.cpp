#include "cli/cli_spec.h"

#include <iostream>
#include <sstream>

namespace commbench {
namespace {
std::vector<CliOption>* g_capture = nullptr;
}  // namespace

void offer_options(const boost::program_options::options_description& d) {
  if (!g_capture) return;
  for (const auto& o : d.options()) {
    CliOption c;
    c.long_name = o->long_name();
    // format_name() is "-o [ --output-dir ]" or "--file": the short name is the "-x" part.
    const std::string f = o->format_name();
    if (f.size() >= 2 && f[0] == '-' && f[1] != '-') c.short_name = f.substr(1, 1);
    c.help = o->description();
    c.takes_value = o->semantic() && o->semantic()->max_tokens() > 0;
    g_capture->push_back(std::move(c));
  }
}

std::vector<CliOption> capture_options(int (*command)(const std::vector<std::string>&)) {
  std::vector<CliOption> out;
  g_capture = &out;
  std::ostringstream sink;
  auto* old_out = std::cout.rdbuf(sink.rdbuf());
  auto* old_err = std::cerr.rdbuf(sink.rdbuf());
  try {
    command({"--help"});
  } catch (...) {
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  g_capture = nullptr;
  return out;
}

}  // namespace commbench
