// Small helpers shared by the ucx plugin's unit tests.
#pragma once

#include <functional>
#include <sstream>
#include <string>

#include "commbench/backend.h"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend::test {

template <class... T>
std::string str(const T&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// The code of the PluginError that f throws (its message into *message), CB_OK if none.
inline cb_status code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const sdk::PluginError& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return CB_OK;
}

}  // namespace commbench::ucx_backend::test
