// Status helpers: early-return macros over absl::Status / absl::StatusOr.
#ifndef QCC_SUPPORT_STATUS_H_
#define QCC_SUPPORT_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define QCC_CONCAT_INNER_(a, b) a##b
#define QCC_CONCAT_(a, b) QCC_CONCAT_INNER_(a, b)

/// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define QCC_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::absl::Status qcc_status_ = (expr);       \
    if (!qcc_status_.ok()) return qcc_status_; \
  } while (0)

#define QCC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(*tmp)

/// `QCC_ASSIGN_OR_RETURN(auto x, F());` assigns the value of a StatusOr or returns its error.
#define QCC_ASSIGN_OR_RETURN(lhs, expr) \
  QCC_ASSIGN_OR_RETURN_IMPL_(QCC_CONCAT_(qcc_statusor_, __LINE__), lhs, expr)

#endif  // QCC_SUPPORT_STATUS_H_
