// How the agent binds the ranks it starts to CPUs (run setting `cpu_binding`,
// docs/configuration.md): `none` leaves them where the launcher or the OS put them; `core` gives
// each local rank one physical core, `numa` one NUMA node, as Open MPI's --bind-to core / numa
// do. launch/cpu_binding.h deals the CPUs.
#pragma once

#include <string_view>

namespace commbench {

enum class CpuBinding { None, Core, Numa };

inline std::string_view cpu_binding_name(CpuBinding b) {
  switch (b) {
    case CpuBinding::Core: return "core";
    case CpuBinding::Numa: return "numa";
    case CpuBinding::None: break;
  }
  return "none";
}

}  // namespace commbench
