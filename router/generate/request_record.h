// One request the router answers, from arrival to its answer: its id (held
// in the process's crash report while it runs, common/crash_report.h), and
// what its access-log line says. The HTTP front end makes one per request
// (RecordedResponseWriter), the gRPC one per call; a generation call fills
// in its model, time to first token and tokens through CallMetrics.
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/crash_report.h"
#include "router/generate/access_log.h"

namespace tandem::router {

// the id a request goes by: the client's (X-Request-Id, a gRPC request_id)
// when it is 1 to 64 printable ASCII characters without spaces, else a new
// "req-" and 16 hex digits.
std::string requestIdFor(std::string_view client_id);

class RequestRecord {
 public:
  using Clock = std::chrono::steady_clock;

  // `log` may be null (no access log); the record still holds its id.
  RequestRecord(AccessLogPtr log, std::string protocol, std::string api, std::string peer,
                std::string request_id);
  // a record never finished (its writer dropped) logs status 500.
  ~RequestRecord();

  const std::string& id() const { return request_id_; }

  void setModel(std::string model);
  // now is the first token's time (the first call only).
  void firstToken();
  void setTokens(int prompt, int output);
  // the status the call itself answered, which wins over the transport's
  // (an error event inside a 200 stream is the call's 500).
  void setCallStatus(int status);
  // the request is answered with `status`: writes its access line and
  // releases its id, once; later calls do nothing.
  void finish(int status);

 private:
  const AccessLogPtr log_;
  const std::string request_id_;
  std::mutex mu_;
  AccessEntry entry_;                  // guarded by mu_
  Clock::time_point arrival_;
  std::optional<Clock::time_point> first_token_;  // guarded by mu_
  std::optional<int> call_status_;     // guarded by mu_
  bool finished_ = false;              // guarded by mu_
  crash::InFlightIds::Hold hold_;      // guarded by mu_
};
using RequestRecordPtr = std::shared_ptr<RequestRecord>;

}  // namespace tandem::router
