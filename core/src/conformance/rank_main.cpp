#include "conformance/rank_main.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "bootstrap/store.h"
#include "conformance/rank_suite.h"
#include "plugin/loader.h"

namespace po = boost::program_options;

namespace commbench {

int conformance_rank_main(int argc, char** argv) {
  RankSuiteOptions opts;
  std::string store, plugin_path, stage;
  std::vector<std::string> options;
  int parent = 0;
  try {
    po::options_description d("conformance rank");
    d.add_options()("rank", po::value(&opts.rank)->required())("world", po::value(&opts.world)->required())(
        "store", po::value(&store)->required())("plugin", po::value(&plugin_path)->required())(
        "stage", po::value(&stage)->required())("op-timeout-ms", po::value(&opts.op_timeout_ms))(
        "max-bytes", po::value(&opts.max_bytes))(
        "option", po::value(&options)->composing())("parent-pid", po::value(&parent));
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, d), vm);
    po::notify(vm);
    for (const std::string& kv : options) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos) throw po::error("--option wants KEY=VALUE, got '" + kv + "'");
      opts.options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  } catch (const std::exception& e) {
    std::cerr << "commbench __conformance_rank: " << e.what() << " (started by `commbench conformance`)\n";
    return 2;
  }
  if (parent > 0) {  // never outlive the driver
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) return 1;
  }
  ResultChannel out(3, opts.rank);
  try {
    out.phase("conformance: connect to store");
    const auto colon = store.rfind(':');
    const char* token = std::getenv("COMMBENCH_STORE_TOKEN");
    auto client = StoreClient::connect(store.substr(0, colon), static_cast<uint16_t>(std::stoi(store.substr(colon + 1))),
                                       Millis(30000), token ? token : "");
    Bootstrap bootstrap(*client, fmt::format("conformance-{}-{}", stage, opts.world), opts.rank, opts.world);
    Bootstrap suite(*client, fmt::format("conformance-{}-{}-suite", stage, opts.world), opts.rank, opts.world);
    out.phase("conformance: load plugin");
    static const LoadedPlugin plugin = load_plugin(plugin_path);
    const int rc = stage == "options"    ? run_unknown_option_check(plugin, bootstrap, out)
                   : stage == "deadline" ? run_deadline_check(plugin, bootstrap, suite, out, opts)
                                         : run_rank_suite(plugin, bootstrap, suite, out, opts);
    // The driver takes an exit code 0 without this line for an exit() inside the plugin.
    if (rc == 0) out.send({{"type", "finished"}});
    return rc;
  } catch (const std::exception& e) {
    out.send({{"type", "error"}, {"message", e.what()}});
    return 1;
  }
}

}  // namespace commbench
