// The one way an in-flight HTTP call (CompletionCall, ResponsesCall) cancels
// its upstream work when the client disconnects: the writer's onClose runs
// the call's handler while the call still lives. The connection holds the
// call only weakly, so a call that finished is not kept alive by it.
#pragma once

#include <memory>

#include "common/http/http_server.h"

namespace tandem::router {

// when `writer`'s client goes away before the response completed, runs
// `(call->*gone)()` on an I/O thread (at once if it has already gone), unless
// `call` was destroyed by then. `gone` may be private: the caller names it.
template <typename Call>
void callOnClientGone(http::ResponseWriter& writer, const std::shared_ptr<Call>& call,
                      void (Call::*gone)()) {
  std::weak_ptr<Call> weak = call;
  writer.onClose([weak, gone] {
    if (std::shared_ptr<Call> c = weak.lock()) (c.get()->*gone)();
  });
}

}  // namespace tandem::router
