#include "device/runtime_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace commbench::cuda {

OpenedLibrary open_runtime_library(const char* env_var, const char* default_name) {
  OpenedLibrary out;
  const char* env = std::getenv(env_var);
  out.from_env = env && *env;
  out.path = out.from_env ? env : default_name;
  // RTLD_LOCAL: plugins linked against the same soname get this loaded object through it anyway.
  out.handle = ::dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.handle) {
    const char* err = ::dlerror();
    out.error = err ? err : "unknown error";
  }
  return out;
}

void* find_symbol(void* lib, const char* name, std::string* missing) {
  void* p = ::dlsym(lib, name);
  if (!p && missing) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
  return p;
}

}  // namespace commbench::cuda
