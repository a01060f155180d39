#include "common/failure_kind.h"

#include <array>

namespace commbench {
namespace {

struct KindRow {
  FailureKind kind;
  std::string_view name;
  cb_status status;  // the ABI status of this kind; CB_OK: none
  bool consequence;  // a rank failing this way was failed by another: a wait timed out, a peer went away
};

constexpr std::array<KindRow, 12> kKinds = {{
    {FailureKind::kTimeout, "timeout", CB_ERR_TIMEOUT, true},
    {FailureKind::kUnavailable, "unavailable", CB_ERR_UNAVAILABLE, false},
    {FailureKind::kUnimplemented, "unimplemented", CB_ERR_UNIMPLEMENTED, false},
    {FailureKind::kInvalidArgument, "invalid_argument", CB_ERR_INVALID_ARGUMENT, false},
    {FailureKind::kResourceExhausted, "resource_exhausted", CB_ERR_RESOURCE_EXHAUSTED, false},
    {FailureKind::kInternal, "internal", CB_ERR_INTERNAL, false},
    {FailureKind::kRemote, "remote", CB_ERR_REMOTE, true},
    {FailureKind::kStore, "store", CB_OK, false},
    {FailureKind::kOther, "other", CB_OK, false},
    {FailureKind::kCrash, "crash", CB_OK, false},
    {FailureKind::kOutOfMemory, "out_of_memory", CB_OK, false},
    {FailureKind::kInterrupted, "interrupted", CB_OK, false},
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

bool is_consequence(FailureKind kind) {
  for (const KindRow& row : kKinds)
    if (row.kind == kind) return row.consequence;
  return false;
}

FailureKind failure_kind_of(cb_status status) {
  for (const KindRow& row : kKinds)
    if (row.status != CB_OK && row.status == status) return row.kind;
  return FailureKind::kInternal;
}

}  // namespace commbench
