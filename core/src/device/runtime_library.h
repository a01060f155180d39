// Opening a library the core loads at run time (CUDA runtime, cuBLAS) and binding its symbols:
// the same steps for each, so that a new one says what was tried the same way.
#pragma once

#include <string>

namespace commbench::cuda {

struct OpenedLibrary {
  void* handle = nullptr;  // null: `error` is dlerror()'s text
  std::string path;        // what was opened: the environment variable's value or the default
  bool from_env = false;
  std::string error;
};
// dlopen(RTLD_NOW | RTLD_LOCAL) of getenv(env_var) when set and not empty, else `default_name`.
OpenedLibrary open_runtime_library(const char* env_var, const char* default_name);

// dlsym(lib, name); when it is missing and `missing` is given, appends the name to it ("a, b").
void* find_symbol(void* lib, const char* name, std::string* missing);
template <class F>
void bind_symbol(void* lib, const char* name, F& fn, std::string* missing) {
  fn = reinterpret_cast<F>(find_symbol(lib, name, missing));
}

}  // namespace commbench::cuda
