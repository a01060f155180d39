// The options of every command, read from the definitions the commands parse with (their
// boost::program_options descriptions; argparse for the Python ones), so that the usage text,
// the shell completions and the man page never list an option the command does not take.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace commbench {

struct CliOption {
  std::string long_name;   // "output-dir" (no dashes); empty for a positional-only entry
  std::string short_name;  // "o" or ""
  std::string help;
  bool takes_value = false;
};

// Called by every command's parser with its description before it parses: records the options
// while capture_options() runs, does nothing otherwise.
void offer_options(const boost::program_options::options_description& d);

// Runs `command` with "--help" (its output discarded) and returns the options it offered.
std::vector<CliOption> capture_options(int (*command)(const std::vector<std::string>&));

}  // namespace commbench
