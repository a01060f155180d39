// The commands written in Python (report, compare, check): the python/commbench package of the
// source tree, installed under <prefix>/share/commbench/python. The C++ side only finds the
// package and an interpreter and runs `python3 -m commbench <command> ...`.
#pragma once

#include <string>
#include <vector>

namespace commbench {

// Everything the lookup depends on, so tests can build one without touching the process.
struct PythonToolInputs {
  std::string env_python;      // COMMBENCH_PYTHON ("" = unset)
  std::string env_python_dir;  // COMMBENCH_PYTHON_DIR ("" = unset)
  std::string exe_path;        // this binary ("" = unknown)
  std::string install_dir;     // COMMBENCH_INSTALL_PYTHON_DIR, fixed at configure time
};

// Folders that may hold the package (a folder qualifies when <dir>/commbench/__main__.py
// exists), in order: COMMBENCH_PYTHON_DIR, <exe dir>/../share/commbench/python (the build tree
// mirrors the install tree), the install folder.
std::vector<std::string> python_package_dirs(const PythonToolInputs& in);

// The interpreter: COMMBENCH_PYTHON, else /usr/bin/python3 (where scripts/install-deps.sh puts
// Debian's python3-matplotlib), else python3 on PATH.
std::string python_interpreter(const PythonToolInputs& in);

// Runs `python -m commbench <args...>` with the package on PYTHONPATH and the same stdout and
// stderr; returns its exit code. When no package or interpreter is found: says what to install
// and returns 2. `what` names the command in messages ("commbench report").
// `interrupted` (optional): set when a signal to commbench stopped the tool (it was passed on).
int run_python_tool(const std::vector<std::string>& args, const std::string& what, bool* interrupted = nullptr);
// The same, quietly, returning what the tool printed on stdout ("" when it could not run).
std::string python_tool_output(const std::vector<std::string>& args);

}  // namespace commbench
