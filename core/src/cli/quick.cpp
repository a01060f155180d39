#include "cli/quick.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/console_text.h"
#include "common/exit_codes.h"
#include "cli/cli_spec.h"
#include "cli/commands.h"
#include "cli/experiment_loading.h"
#include "experiment/sizes.h"

namespace po = boost::program_options;

namespace commbench {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// A TOML basic string (quotes and backslashes escaped).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string string_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quoted(v[i]);
  return out + "]";
}

// Values written into the TOML unquoted (numbers, lists of numbers): anything else is written
// as a string, so the parser reports "expected an integer" instead of the text changing the file.
// Only numbers pass unquoted ("8", "1e3"), or a comma list of them ("2, 4"): anything else
// ("1 2", "abc", "e") unquoted would draw the TOML parser's own message instead of the key's.
std::string raw(const std::string& v) {
  static const std::regex number_list(
      R"(\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*(,\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*)*)");
  return std::regex_match(v, number_list) ? v : quoted(v);
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

class Writer {
 public:
  Writer() { origin_.push_back(""); }
  void line(const std::string& text, const std::string& flag = "") {
    toml_ += text + "\n";
    origin_.push_back(flag);
  }
  void error(const std::string& flag, const std::string& message) { errors_.push_back(flag + ": error: " + message); }
  void note(const std::string& flag, const std::string& message) { notes_.push_back(flag + ": " + message); }
  QuickExperiment done() { return QuickExperiment{toml_, origin_, errors_, notes_}; }

 private:
  std::string toml_;
  std::vector<std::string> origin_;
  std::vector<std::string> errors_;
  std::vector<std::string> notes_;
};

}  // namespace

std::string quick_op_name(const std::string& op) {
  // nccl-tests' op words and its binaries' names (all_reduce_perf ...), so a command line copied
  // from an nccl-tests run works with the binary's name in place of the op.
  static const std::map<std::string, std::string> kNcclTests{
      {"all_reduce", "allreduce"}, {"all_gather", "allgather"}, {"reduce_scatter", "reducescatter"},
      {"all_to_all", "alltoall"},  {"alltoall", "alltoall"},   {"send_recv", "sendrecv"},
      {"sendrecv", "sendrecv"},     {"broadcast", "broadcast"}, {"reduce", "reduce"},
      {"gather", "gather"},         {"scatter", "scatter"}};
  std::string word = op;
  constexpr std::string_view kPerf = "_perf";
  if (word.size() > kPerf.size() && word.compare(word.size() - kPerf.size(), kPerf.size(), kPerf) == 0) {
    word.resize(word.size() - kPerf.size());
    if (kNcclTests.count(word)) return kNcclTests.at(word);
    return op;  // an nccl-tests binary commbench has no op for: the op check names it
  }
  auto it = kNcclTests.find(word);
  return it == kNcclTests.end() ? op : it->second;
}

std::string quick_dtype_name(const std::string& dtype) {
  static const std::map<std::string, std::string> kNcclTests{
      {"float", "f32"},  {"half", "f16"},    {"bfloat16", "bf16"}, {"double", "f64"},
      {"int", "int32"},  {"fp8_e4m3", "f8e4m3"}, {"fp8_e5m2", "f8e5m2"}};
  auto it = kNcclTests.find(dtype);
  return it == kNcclTests.end() ? dtype : it->second;
}

std::string quick_size(const std::string& size) {
  if (all_digits(size)) return size + "B";
  // "1.5K" too: a decimal number of binary units (the size parser refuses what is not whole bytes).
  const std::string number = size.substr(0, size.size() - 1);
  const bool decimal = std::count(number.begin(), number.end(), '.') == 1 && number.front() != '.' &&
                       number.back() != '.' && number.find_first_not_of("0123456789.") == std::string::npos;
  if (size.size() >= 2 && (all_digits(number) || decimal)) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(size.back())));
    if (unit == 'K' || unit == 'M' || unit == 'G' || unit == 'T')
      return size.substr(0, size.size() - 1) + unit + "iB";
  }
  return size;
}

QuickExperiment quick_experiment(const QuickFlags& f) {
  Writer w;
  w.line("# Written by commbench quick (docs/configuration.md, Quick runs); run it with commbench run FILE.");
  w.line("name = \"quick\"");
  w.line("output_dir = " + quoted(f.output_dir), "-O " + f.output_dir);
  w.line("");
  w.line("[[run]]");
  w.line("name = \"quick\"");
  std::vector<std::string> backends;
  for (const auto& b : f.backends)
    for (const auto& x : split_commas(b)) backends.push_back(x);
  if (backends.empty() && !f.backends.empty())  // --backend '' is not "the default"
    w.error("--backend", "expected a backend name, such as gloo or gloo,ucx (commbench plugins lists them)");
  if (backends.empty()) backends.push_back("gloo");
  w.line("backends = " + string_list(backends), "--backend " + fmt::format("{}", fmt::join(backends, ",")));
  std::vector<std::string> ops;
  for (const auto& o : f.ops)
    for (const auto& x : split_commas(o)) ops.push_back(quick_op_name(x));
  w.line("ops = " + string_list(ops), "OPS " + fmt::format("{}", fmt::join(ops, ",")));
  const std::string sizes_flag = fmt::format("-b {} -e {}", f.min_bytes, f.max_bytes);
  const std::string lo = quick_size(f.min_bytes), hi = quick_size(f.max_bytes);
  const auto blo = parse_size(lo), bhi = parse_size(hi), bstep = parse_size(quick_size(f.step));
  constexpr uint64_t kMaxSteps = 4096;
  // nccl-tests: a factor above 1 multiplies and wins over -i; -f 1 (its default) adds -i.
  // Checked whether or not it is used, and written as the number it is ("02" is not TOML).
  std::optional<int> factor;
  if (!f.factor.empty()) {
    if (all_digits(f.factor) && f.factor.size() <= 6 && std::stoi(f.factor) >= 1) factor = std::stoi(f.factor);
    else w.error("-f " + console_safe(f.factor), "expected a whole factor of 2 or more, such as 2 (or -f 1 with -i, to add a step)");
  }
  const bool factor_multiplies = factor && *factor >= 2;
  const bool step_given = !f.step.empty() && f.step != "0";
  const bool stepped = step_given && !factor_multiplies;
  if (step_given && factor_multiplies)
    w.note("-i " + f.step, fmt::format("not used: -f {} multiplies the size (as in nccl-tests, a factor above 1 "
                                       "wins over -i; -f 1 adds -i instead)", *factor));
  if (factor == 1 && !step_given)
    w.error("-f 1", "adds -i to the size each step (as in nccl-tests): give -i, such as -i 1M, or -f 2 or more");
  const bool step_in_bytes = bstep && !bstep.value->elements && bstep.value->value > 0;
  if (stepped && blo && bhi && !blo.value->elements && !bhi.value->elements && blo.value->value > bhi.value->value) {
    w.error(sizes_flag, "-b is larger than -e: the sweep goes from -b up to -e");
  } else if (stepped && blo && bhi && step_in_bytes && !blo.value->elements && !bhi.value->elements &&
      (bhi.value->value - std::min(bhi.value->value, blo.value->value)) / bstep.value->value < kMaxSteps) {
    // nccl-tests -i: arithmetic steps, written out as a list (the file format has no such range).
    std::vector<std::string> list;
    for (uint64_t b = blo.value->value; b <= bhi.value->value; b += bstep.value->value)
      list.push_back(fmt::format("{}B", b));
    w.line("sizes = " + string_list(list), sizes_flag + " -i " + f.step);
  } else if (stepped && !step_in_bytes) {
    // The file has no arithmetic range, so the parser could only name a key of its own here.
    w.error("-i " + f.step, "expected a positive step in bytes, such as 4096 or 1M");
  } else if (stepped && blo && bhi && !blo.value->elements && !bhi.value->elements) {
    w.error(sizes_flag + " -i " + f.step,
            fmt::format("more than {} sizes from -b to -e in steps of -i: take a larger step, or "
                        "-f for a geometric sweep", kMaxSteps));
  } else if (stepped) {
    // -b or -e is not a size: the parser names it (the step is then not used).
    w.line(fmt::format("sizes = {{ min = {}, max = {}, factor = 2 }}", quoted(lo), quoted(hi)), sizes_flag);
  } else if (lo == hi || (!f.factor.empty() && !factor_multiplies)) {  // one size; -f 1 or a bad -f said above
    w.line("sizes = [" + quoted(lo) + "]", sizes_flag);
  } else {
    w.line(fmt::format("sizes = {{ min = {}, max = {}, factor = {} }}", quoted(lo), quoted(hi), factor.value_or(2)),
           sizes_flag + (f.factor.empty() ? "" : " -f " + f.factor));
  }
  // Each entry on its own: as one string the loader would name world_sizes[0] whatever was wrong.
  {
    std::string bad;
    std::stringstream list(f.ranks);
    for (std::string item; std::getline(list, item, ',');) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!all_digits(item) && bad.empty()) bad = item.empty() ? "an empty entry" : "'" + item + "'";
    }
    if (f.ranks.empty() || f.ranks.back() == ',') bad = "an empty entry";
    if (bad.empty()) w.line("world_sizes = [" + f.ranks + "]", "--ranks " + f.ranks);
    else w.error("--ranks " + f.ranks, bad + " is not a number of ranks: write whole numbers separated by commas, such as 2,4,8");
  }
  if (!f.dtype.empty()) w.line("dtype = " + quoted(quick_dtype_name(f.dtype)), "-d " + f.dtype);
  if (!f.redop.empty()) w.line("redop = " + quoted(f.redop), "-o " + f.redop);
  if (!f.iters.empty()) w.line("iterations = " + raw(f.iters), "-n " + f.iters);
  if (!f.warmup.empty()) w.line("warmup = " + raw(f.warmup), "-w " + f.warmup);
  if (!f.check.empty()) {
    // nccl-tests' -c N (N check iterations, 0: none), or the file's true / false; anything else is
    // refused in the flag's own words ("-c no" once meant checking on). commbench checks each
    // case twice (its first op and one after the timed loop: docs/metrics.md), whatever N.
    static const std::map<std::string, std::string> kCheck{{"true", "true"}, {"false", "false"}};
    const auto it = kCheck.find(f.check);
    if (it != kCheck.end()) {
      w.line("check = " + it->second, "-c " + f.check);
    } else if (all_digits(f.check) && f.check.size() <= 9) {
      const bool on = f.check.find_first_not_of('0') != std::string::npos;
      w.line(on ? "check = true" : "check = false", "-c " + f.check);
      if (on && std::stol(f.check) > 1)
        w.note("-c " + f.check, "commbench checks each case twice, on its first op and on one op after its timed loop "
                                          "(nccl-tests' count is not used)");
    } else {
      w.error("-c " + f.check, "expected a number of check iterations (0: no check; any other number: commbench's "
                                        "checks) or true/false");
    }
  }
  if (!f.root.empty()) w.line("root = " + raw(f.root), "-r " + f.root);
  // -T takes seconds ("1.5") or a duration ("1.5s", "2min"): a plain number gets its unit here.
  const bool seconds = !f.timeout.empty() && f.timeout.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(f.timeout.begin(), f.timeout.end(), '.') <= 1 && f.timeout != ".";
  if (!f.timeout.empty()) w.line("timeout = " + quoted(f.timeout + (seconds ? "s" : "")), "-T " + f.timeout);
  if (!f.memory.empty()) w.line("memory = " + quoted(f.memory), "--memory " + f.memory);
  if (!f.placement.empty()) w.line("placement = " + quoted(f.placement), "--placement " + f.placement);
  // nccl-tests -G N: N iterations captured in a CUDA graph; -a: 0 rank 0, 1 avg, 2 min, 3 max.
  if (!f.graph.empty() && !all_digits(f.graph)) {
    w.error("-G " + f.graph, "expected a number of iterations per graph, 0 or more (0 leaves the method alone)");
  } else if (!f.graph.empty() && f.graph.find_first_not_of('0') != std::string::npos) {
    if (!f.timing.empty() && f.timing != "graph")
      w.error("-G " + f.graph + " --method " + f.timing, "-G times with graphs, --method asks otherwise: keep one");
    else
      w.line("method = \"graph\"", "-G " + f.graph);
  } else if (!f.timing.empty()) {
    w.line("method = " + quoted(f.timing), "--method " + f.timing);
  }
  if (!f.average.empty()) {
    static const std::map<std::string, std::string> kAverage{{"0", "rank0"}, {"1", "avg"}, {"2", "min"}, {"3", "max"}};
    const auto it = kAverage.find(f.average);
    // The names themselves (avg, min...) go to the parser, which lists them on a typo.
    if (it == kAverage.end() && all_digits(f.average))
      w.error("-a " + f.average, "expected 0 (rank 0's time), 1 (the ranks' average), 2 (minimum) or 3 (maximum)");
    else
      w.line("rank_aggregation = " + quoted(it == kAverage.end() ? f.average : it->second), "-a " + f.average);
  }
  return w.done();
}

int cmd_quick(const std::vector<std::string>& args) {
  QuickFlags f;
  std::string save, launcher, former_timing;
  std::vector<std::string> plugin_dirs;
  po::options_description d(
      "Usage: commbench quick OPS [options]\n\n"
      "Runs OPS (comma-separated: allreduce,allgather or nccl-tests' all_reduce...) without an\n"
      "experiment file and writes the same tables and results folder as 'commbench run'.\n"
      "Flags use nccl-tests' letters and meanings; sizes take K, M, G (powers of 1024).\n\n"
      "Options");
  d.add_options()("help,h", "show this help")(
      "ops", po::value(&f.ops)->multitoken(), "ops to run")(
      "backend", po::value(&f.backends)->composing(), "backend(s), comma-separated (default gloo)")(
      "ranks", po::value(&f.ranks), "world size(s), comma-separated (default 2)")(
      "minbytes,b", po::value(&f.min_bytes), "smallest size (default 32M)")(
      "maxbytes,e", po::value(&f.max_bytes), "largest size (default 32M)")(
      "stepfactor,f", po::value(&f.factor), "multiply the size by this (default 2)")(
      "stepbytes,i", po::value(&f.step), "add this to the size instead, when -f is not given or is 1 (0 = use -f)")(
      "iters,n", po::value(&f.iters), "timed iterations (default 20)")(
      "warmup_iters,w", po::value(&f.warmup), "warm-up iterations (default 5)")(
      "check,c", po::value(&f.check), "check results: N > 0 (nccl-tests' check count; commbench checks each case twice, whatever N) or 0 (true or false; default 1)")(
      "op,o", po::value(&f.redop), "reduce op: sum, prod, min, max, avg (default sum)")(
      "datatype,d", po::value(&f.dtype), "dtype: float, half, bfloat16, double, int8, ... (default float)")(
      "root,r", po::value(&f.root), "root rank of rooted ops (default 0)")(
      "average,a", po::value(&f.average), "rank aggregation of batch/graph timing: 0 rank 0, 1 avg (default), 2 min, 3 max")(
      "cudagraph,G", po::value(&f.graph), "N > 0: time iterations captured in a CUDA graph (timing = graph)")(
      "method", po::value(&f.timing), "batch (default), per_iteration or graph (docs/metrics.md)")(
      "timing", po::value(&former_timing), "the former name of --method")(
      "timeout,T", po::value(&f.timeout), "limit per execution, seconds or a duration (\"10min\")")(
      "memory", po::value(&f.memory), "host, host_pinned or cuda (default host)")(
      "placement", po::value(&f.placement), "out_of_place or in_place")(
      "output-dir,O", po::value(&f.output_dir), "results folder parent (default ./results)")(
      "save", po::value(&save), "also write the experiment as a TOML file")(
      "plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
      "launcher", po::value(&launcher), "as in 'commbench run'")(
      "quiet,q", "nothing on stdout (files are still written)")(
      "json", "print the job's summary.json on stdout when it ends (implies --quiet)");
  offer_options(d);
  po::positional_options_description pos;
  pos.add("ops", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(d).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    // nccl-tests' flags that have no counterpart here: say what to do instead of "unrecognised".
    static const std::map<std::string, std::string> kNcclTestsOnly{
        {"-g", "(GPUs per thread) has no counterpart: commbench runs one rank per GPU; use --ranks N"},
        {"-t", "(threads per process) has no counterpart: commbench runs one rank per process; use --ranks N"},
        {"-m", "(aggregated iterations) has no counterpart: each iteration is one op; see --method"},
        {"-p", "(parallel init) has no counterpart: ranks always create their communicators together"},
        {"-z", "(blocking collectives) has no counterpart: set the backend's own option in a file (docs/backends)"},
        {"-C", "(report CPU time) has no counterpart: use --method per_iteration for host-side latency"},
        {"-R", "(register buffers) has no counterpart: set the backend's own option in a file (docs/backends)"},
        {"-N", "(run cycles) has no counterpart: use repeats in an experiment file (--save writes one)"}};
    const std::string flag = e.get_option_name();
    if (auto it = kNcclTestsOnly.find(flag); it != kNcclTestsOnly.end()) {
      std::cerr << fmt::format("commbench quick: nccl-tests' {} {}\n", flag, it->second);
      return kExitInvalid;
    }
    std::cerr << fmt::format("commbench quick: {}\nTry 'commbench quick --help'.\n", e.what());
    return kExitInvalid;
  } catch (const po::error& e) {
    std::cerr << fmt::format("commbench quick: {}\nTry 'commbench quick --help'.\n", e.what());
    return kExitInvalid;
  }
  if (vm.count("help")) {
    std::cout << d << "\n";
    return 0;
  }
  if (!former_timing.empty()) {
    if (!f.timing.empty() && f.timing != former_timing) {
      std::cerr << fmt::format("commbench quick: --method {} and --timing {} disagree: keep --method (--timing is "
                               "its former name)\n", f.timing, former_timing);
      return kExitInvalid;
    }
    std::cerr << "commbench quick: --timing is the former name of --method\n";
    f.timing = former_timing;
  }
  if (f.ops.empty()) {
    std::cerr << "commbench quick: name the ops to run, e.g. 'commbench quick allreduce -b 8 -e 1G'\n";
    return kExitInvalid;
  }
  const QuickExperiment q = quick_experiment(f);
  for (const std::string& e : q.errors) std::cerr << "commbench quick: " << e << "\n";
  for (const std::string& n : q.notes) std::cerr << "commbench quick: " << n << "\n";
  if (!q.errors.empty()) return kExitInvalid;
  // Errors name the flag that wrote the line they are about; the generated file's line numbers
  // mean nothing to the user, so a line no flag wrote (a default) is not named at all.
  const auto print = [&](const std::vector<Diagnostic>& diags) {
    for (const Diagnostic& diag : diags) {
      const int line = diag.pos.line;
      Diagnostic named = diag;
      named.pos = line > 0 && line < static_cast<int>(q.origin.size()) && !q.origin[line].empty()
                      ? SourcePos{"commbench quick: " + q.origin[line], 0, 0}
                      : SourcePos{"commbench quick", 0, 0};
      std::cerr << named.format() << "\n";
    }
  };
  auto loaded = validate_parsed(parse_experiment_string(q.toml, "commbench quick"), plugin_dirs, print);
  if (!loaded) return kExitInvalid;  // and nothing saved: a file that would not run is no use
  if (!save.empty()) {
    if (std::error_code ec; std::filesystem::is_directory(save, ec)) {
      std::cerr << fmt::format("commbench quick: --save {}: a folder; name a file, e.g. {}/quick.toml\n", save, save);
      return kExitInvalid;
    }
    // Replace only what quick wrote before (or an empty file: --save "$(mktemp)"): a file of the
    // user's would be lost without a word.
    if (std::ifstream existing(save); existing) {
      std::string first;
      if (std::getline(existing, first) && first.rfind("# Written by commbench quick", 0) != 0) {
        std::cerr << fmt::format("commbench quick: --save {}: the file exists and commbench quick did not write it; "
                                 "choose another name or remove it\n", save);
        return kExitInvalid;
      }
    }
    std::ofstream out(save);
    out << q.toml;
    if (!out.flush()) {
      std::cerr << fmt::format("commbench quick: --save {}: cannot write the file: {}\n", save, std::strerror(errno));
      return kExitInvalid;
    }
  }
  return run_experiment(*loaded, "", vm.count("quiet") > 0 || vm.count("json") > 0, launcher, vm.count("json") > 0);
}

}  // namespace commbench
