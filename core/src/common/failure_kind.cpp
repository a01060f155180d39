#include "common/failure_kind.h"

#include <array>

namespace commbench {
namespace {

struct KindRow {
  FailureKind kind;
  std::string_view name;
  cb_status status;  // the ABI status of this kind; CB_OK: none
};

constexpr std::array<KindRow, 12> kKinds = {{
    {FailureKind::kTimeout, "timeout", CB_ERR_TIMEOUT},
    {FailureKind::kUnavailable, "unavailable", CB_ERR_UNAVAILABLE},
    {FailureKind::kUnimplemented, "unimplemented", CB_ERR_UNIMPLEMENTED},
    {FailureKind::kInvalidArgument, "invalid_argument", CB_ERR_INVALID_ARGUMENT},
    {FailureKind::kResourceExhausted, "resource_exhausted", CB_ERR_RESOURCE_EXHAUSTED},
    {FailureKind::kInternal, "internal", CB_ERR_INTERNAL},
    {FailureKind::kRemote, "remote", CB_ERR_REMOTE},
    {FailureKind::kStore, "store", CB_OK},
    {FailureKind::kOther, "other", CB_OK},
    {FailureKind::kCrash, "crash", CB_OK},
    {FailureKind::kOutOfMemory, "out_of_memory", CB_OK},
    {FailureKind::kInterrupted, "interrupted", CB_OK},
}};

}  // namespace

std::string_view failure_kind_name(FailureKind kind) {
  for (const KindRow& row : kKinds)
    if (row.kind == kind) return row.name;
  return "other";
}

FailureKind failure_kind_from_name(std::string_view name) {
  for (const KindRow& row : kKinds)
    if (row.name == name) return row.kind;
  return FailureKind::kOther;
}

FailureKind failure_kind_of(cb_status status) {
  for (const KindRow& row : kKinds)
    if (row.status != CB_OK && row.status == status) return row.kind;
  return FailureKind::kInternal;
}

}  // namespace commbench
