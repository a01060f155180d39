#include "observe/host_metadata.h"

#include <elf.h>
#include <link.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "common/output_placeholders.h"
#include "device/nvml.h"
#include "observe/cpu_list.h"
#include "observe/host_files.h"
#include "common/sha256.h"

namespace commbench {
namespace {

// "key<sep>value" lines, e.g. /proc/meminfo and /etc/os-release.
std::string field(const std::string& text, const std::string& key, char sep) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto pos = line.find(sep);
    if (pos == std::string::npos) continue;
    std::string k = line.substr(0, pos);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k != key) continue;
    std::string v = line.substr(pos + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '"')) v.erase(0, 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.pop_back();
    return v;
  }
  return "";
}

nlohmann::json numa_nodes() {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : list_host_dir("/sys/devices/system/node")) {
    if (n.rfind("node", 0) != 0 || n.size() == 4 || !std::isdigit(static_cast<unsigned char>(n[4]))) continue;
    const std::string dir = "/sys/devices/system/node/" + n;
    nlohmann::json node{{"node", std::stoi(n.substr(4))}, {"cpus", read_host_file(dir + "/cpulist").value_or("")}};
    const std::string kb = field(read_host_file(dir + "/meminfo").value_or(""), fmt::format("Node {} MemTotal", n.substr(4)), ':');
    if (!kb.empty()) node["memory_bytes"] = std::stoull(kb) * 1024;
    nodes.push_back(node);
  }
  return nodes;
}

nlohmann::json nics() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& nic : list_host_dir("/sys/class/net")) {
    const std::string dir = "/sys/class/net/" + nic;
    nlohmann::json j{{"name", nic}};
    if (auto v = read_host_file(dir + "/operstate")) j["state"] = *v;
    if (auto v = read_host_number(dir + "/speed"); v && *v > 0) j["speed_mbps"] = static_cast<int64_t>(*v);  // -1: unknown/down; whole numbers, written as such
    if (auto v = read_host_number(dir + "/mtu")) j["mtu"] = static_cast<int64_t>(*v);
    if (auto v = read_host_file(dir + "/address")) j["address"] = *v;
    const std::string driver = host_link_name(dir + "/device/driver");
    if (!driver.empty()) j["driver"] = driver;
    if (auto v = read_host_number(dir + "/device/numa_node"); v && *v >= 0) j["numa_node"] = static_cast<int64_t>(*v);
    out.push_back(j);
  }
  return out;
}

// TCP's socket buffer sizes in bytes, min / default / max per socket (net.ipv4.tcp_rmem and
// tcp_wmem). Gloo sets none of its own, so its connections start at the defaults and grow by the
// kernel's autotuning, each its own way: with the defaults raised a 2-rank loopback allreduce
// of 1 MiB ran at 0.39-0.40 ms on every context in four launches, and at about 0.47 or 0.84 ms
// per context without (docs/performance.md, "The plugin against gloo in the same processes").
// Each key is left out where its file is unreadable, and the object where both are.
nlohmann::json tcp_buffers() {
  nlohmann::json j = nlohmann::json::object();
  for (const char* name : {"rmem", "wmem"}) {
    const auto text = read_host_file(std::string("/proc/sys/net/ipv4/tcp_") + name);
    if (!text) continue;
    std::istringstream in(*text);
    std::vector<uint64_t> bytes;
    for (uint64_t b = 0; in >> b;) bytes.push_back(b);
    if (bytes.size() == 3 && in.eof()) j[name] = bytes;
  }
  return j;
}

nlohmann::json infiniband() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& dev : list_host_dir("/sys/class/infiniband")) {
    const std::string dir = "/sys/class/infiniband/" + dev;
    nlohmann::json j{{"name", dev}};
    for (const char* f : {"node_type", "fw_ver", "hca_type", "board_id"})
      if (auto v = read_host_file(dir + "/" + f)) j[f] = *v;
    if (auto v = read_host_number(dir + "/device/numa_node"); v && *v >= 0) j["numa_node"] = static_cast<int64_t>(*v);
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : list_host_dir(dir + "/ports")) {
      const std::string pd = dir + "/ports/" + p;
      nlohmann::json port{{"port", p}};
      for (const char* f : {"state", "phys_state", "rate", "link_layer"})
        if (auto v = read_host_file(pd + "/" + f)) port[f] = *v;
      ports.push_back(port);
    }
    j["ports"] = ports;
    out.push_back(j);
  }
  return out;
}

nlohmann::json gpus() {
  std::string why;
  const Nvml* nvml = Nvml::get(&why);
  if (!nvml) return nvml_unavailable(why);
  nlohmann::json j = nvml->driver();
  j["available"] = true;
  nlohmann::json devices = nlohmann::json::array();
  for (unsigned i = 0; i < nvml->device_count(); ++i) devices.push_back(nvml->describe(i));
  j["devices"] = devices;
  j["topology"] = nvml->topology();
  return j;
}

int note_build_id(dl_phdr_info* info, size_t, void* out) {
  auto* id = static_cast<std::string*>(out);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((n->n_namesz + 3) & ~3u);
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::string_view(name, 3) == "GNU") {
        for (unsigned k = 0; k < n->n_descsz; ++k) *id += fmt::format("{:02x}", static_cast<unsigned char>(desc[k]));
        return 1;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // only the first object: the executable
}

}  // namespace

nlohmann::json host_facts() {
  nlohmann::json j;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  j["host"] = host;
  utsname u{};
  ::uname(&u);
  const std::string os = read_host_file("/etc/os-release").value_or("");
  j["os"] = field(os, "PRETTY_NAME", '=');
  j["kernel"] = read_host_file("/proc/sys/kernel/osrelease").value_or(u.release);
  j["machine"] = u.machine;
  const std::string cpuinfo = read_host_file("/proc/cpuinfo").value_or("");
  j["cpu_model"] = field(cpuinfo, "model name", ':');
  const std::string online = read_host_file("/sys/devices/system/cpu/online").value_or("");
  j["cpus_online"] = online;
  j["logical_cpus"] = online.empty() ? static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))
                                     : static_cast<int>(parse_cpulist(online).size());
  const std::string mem_kb = field(read_host_file("/proc/meminfo").value_or(""), "MemTotal", ':');
  if (!mem_kb.empty()) j["memory_bytes"] = std::stoull(mem_kb) * 1024;
  j["numa_nodes"] = numa_nodes();
  j["nics"] = nics();
  if (auto tcp = tcp_buffers(); !tcp.empty()) j["tcp_buffers"] = std::move(tcp);
  j["infiniband"] = infiniband();
  j["gpus"] = gpus();
  return j;
}

nlohmann::json process_binding() {
  const std::set<int> cpus = affinity_cpus();
  nlohmann::json j{{"cpus", format_cpulist(cpus)}, {"cpu_count", cpus.size()}};
  std::set<int> nodes;
  for (const auto& n : list_host_dir("/sys/devices/system/node")) {
    if (n.rfind("node", 0) != 0 || n.size() == 4 || !std::isdigit(static_cast<unsigned char>(n[4]))) continue;
    for (int c : parse_cpulist(read_host_file("/sys/devices/system/node/" + n + "/cpulist").value_or("")))
      if (cpus.count(c)) nodes.insert(std::stoi(n.substr(4)));
  }
  j["numa_nodes"] = nodes;
  // The memory policy's allowed nodes (what numactl --membind / cpusets leave).
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Mems_allowed_list:", 0) == 0) j["mems_allowed"] = field(line, "Mems_allowed_list", ':');
  return j;
}

nlohmann::json environment_by_prefix(const std::map<std::string, std::string>& env) {
  static constexpr const char* kPrefixes[] = {"NCCL_", "UCX_", "GLOO_", "CUDA_", "OMPI_", "SLURM_", "TORCHELASTIC_"};
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : env)
    for (const char* p : kPrefixes)
      if (k.rfind(p, 0) == 0) j[k] = v;
  return j;
}

std::string executable_build_id() {
  std::string id;
  ::dl_iterate_phdr(note_build_id, &id);
  return id;
}

std::string sha256_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return sha256_hex(ss.str());
}

nlohmann::json host_digest(const nlohmann::json& f) {
  nlohmann::json d{{"os", f.value("os", "")}, {"kernel", f.value("kernel", "")},
                   {"cpu_model", f.value("cpu_model", "")}, {"logical_cpus", f.value("logical_cpus", 0)},
                   {"numa_nodes", f.value("numa_nodes", nlohmann::json::array()).size()},
                   {"memory_bytes", f.value("memory_bytes", 0ull)}};
  nlohmann::json nic_names = nlohmann::json::array();
  for (const auto& n : f.value("nics", nlohmann::json::array())) nic_names.push_back(n.value("name", ""));
  d["nics"] = nic_names;
  nlohmann::json ib = nlohmann::json::array();
  for (const auto& n : f.value("infiniband", nlohmann::json::array())) ib.push_back(n.value("name", ""));
  d["infiniband"] = ib;
  const auto& g = f.value("gpus", nlohmann::json::object());
  if (g.value("available", false)) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& dev : g.value("devices", nlohmann::json::array())) names.push_back(dev.value("name", ""));
    d["gpus"] = names;
    d["gpu_driver"] = g.value("driver_version", "");
  }
  return d;
}

std::string hardware_folder_name(const nlohmann::json& f) {
  const auto& g = f.value("gpus", nlohmann::json::object());
  if (!g.value("available", false) || g.value("devices", nlohmann::json::array()).empty()) return "";
  std::string gpu = g["devices"][0].value("name", "gpu");
  std::string driver = g.value("driver_version", "");
  driver = driver.substr(0, driver.find(' '));
  const int cuda = g.value("cuda_driver_version", 0);
  std::string name = fmt::format("{}-{}-cuda{}.{}", gpu, driver, cuda / 1000, (cuda % 1000) / 10);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
  return name;
}

std::string expand_hardware_placeholder(const std::string& output_dir) {
  constexpr std::string_view kPlaceholder = kHardwarePlaceholder;
  const auto pos = output_dir.find(kPlaceholder);
  if (pos == std::string::npos) return output_dir;
  std::string name = hardware_folder_name(host_facts());
  if (name.empty()) name = "cpu-only";
  std::string out = output_dir;
  out.replace(pos, kPlaceholder.size(), name);
  return out;
}

}  // namespace commbench
