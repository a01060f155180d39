#include "common/host_identity.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace commbench {

std::string host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::string kernel_boot_id() {
  std::string id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> id;
  return id;
}

std::string monotonic_clock_identity() {
  std::string offset = "0 0";
  std::ifstream offsets("/proc/self/timens_offsets");
  for (std::string line; std::getline(offsets, line);)
    if (line.rfind("monotonic", 0) == 0 && line.find_first_not_of(" \t", 9) != std::string::npos)
      offset = line.substr(line.find_first_not_of(" \t", 9));
  return kernel_boot_id() + " " + offset;
}

}  // namespace commbench
