#include "conformance/conformance_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace commbench {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string ranks_label(int ranks) { return ranks == 0 ? "alone" : fmt::format("{} rank{}", ranks, ranks == 1 ? "" : "s"); }

}  // namespace

size_t ConformanceReport::count(ConformanceResult r) const {
  return static_cast<size_t>(std::count_if(checks.begin(), checks.end(), [&](const ConformanceCheck& c) { return c.result == r; }));
}

const char* check_result_name(ConformanceResult r) {
  return r == ConformanceResult::Pass ? "pass" : r == ConformanceResult::Fail ? "FAIL" : "skip";
}

void print_conformance(std::ostream& out, const ConformanceReport& report) {
  out << fmt::format("commbench conformance: {} {} ({})\n\n", report.plugin, report.version, report.path);
  size_t width = 5;
  for (const auto& c : report.checks) width = std::max(width, c.name.size());
  out << fmt::format("{:<8} {:<{}}  {:<6} {}\n", "ranks", "check", width, "result", "detail");
  for (const auto& c : report.checks)
    out << fmt::format("{:<8} {:<{}}  {:<6} {}\n", ranks_label(c.ranks), c.name, width, check_result_name(c.result), c.detail);
  const size_t failed = report.count(ConformanceResult::Fail), skipped = report.count(ConformanceResult::Skip);
  out << "\n";
  if (failed > 0) {
    out << fmt::format("verdict: FAIL: {} of {} checks failed\n", failed, report.checks.size());
    for (const auto& c : report.checks)
      if (c.result == ConformanceResult::Fail) out << fmt::format("  - {} ({}): {}\n", c.name, ranks_label(c.ranks), c.detail);
    if (!report.log_dir.empty()) out << fmt::format("The ranks' logs (what the plugin printed) are in {}\n", report.log_dir);
  } else if (report.unavailable) {
    out << "verdict: NOT PROVEN: the backend is unavailable on this machine (see the skipped checks); "
           "run conformance where it can initialise\n";
  } else {
    out << fmt::format("verdict: PASS: {} checks passed, {} skipped (not claimed by the plugin, or not "
                       "possible at that number of ranks)\n",
                       report.checks.size() - skipped, skipped);
  }
}

std::string conformance_junit(const ConformanceReport& report) {
  std::map<int, std::vector<const ConformanceCheck*>> by_ranks;
  for (const auto& c : report.checks) by_ranks[c.ranks].push_back(&c);
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"commbench conformance {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                   xml_escape(report.plugin), report.checks.size(), report.count(ConformanceResult::Fail),
                   report.count(ConformanceResult::Skip));
  for (const auto& [ranks, checks] : by_ranks) {
    size_t failures = 0, skipped = 0;
    for (const auto* c : checks) {
      failures += c->result == ConformanceResult::Fail;
      skipped += c->result == ConformanceResult::Skip;
    }
    const std::string suite = fmt::format("conformance.{}.{}", report.plugin, ranks == 0 ? "alone" : fmt::format("ranks{}", ranks));
    x += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n", xml_escape(suite),
                     checks.size(), failures, skipped);
    for (const auto* c : checks) {
      x += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", xml_escape(suite), xml_escape(c->name));
      if (c->result == ConformanceResult::Pass) {
        x += "/>\n";
        continue;
      }
      x += ">\n";
      if (c->result == ConformanceResult::Fail)
        x += fmt::format("      <failure message=\"{}\"/>\n", xml_escape(c->detail));
      else
        x += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c->detail));
      x += "    </testcase>\n";
    }
    x += "  </testsuite>\n";
  }
  x += "</testsuites>\n";
  return x;
}

}  // namespace commbench
