// Error handling helpers shared by every module.
//
// Request paths return absl::Status / absl::StatusOr; these macros keep the
// propagation short. TANDEM_CHECK guards invariants whose breach means memory
// is corrupt: it is always on and aborts with a message.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TANDEM_CONCAT_INNER(a, b) a##b
#define TANDEM_CONCAT(a, b) TANDEM_CONCAT_INNER(a, b)

// returns the status of `expr` from the enclosing function when it is not ok.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status tandem_status_ = (expr);    \
    if (!tandem_status_.ok()) return tandem_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, makeX());` declares x from an ok StatusOr, or
// returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  TANDEM_ASSIGN_OR_RETURN_IMPL(TANDEM_CONCAT(tandem_statusor_, __LINE__), lhs, expr)
#define TANDEM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()

#define TANDEM_CHECK(cond)                                                   \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "%s:%d: TANDEM_CHECK failed: %s\n", __FILE__,     \
                   __LINE__, #cond);                                         \
      std::abort();                                                          \
    }                                                                        \
  } while (0)
