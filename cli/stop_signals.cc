#include "cli/stop_signals.h"

#include <pthread.h>

namespace tandem::cli {

sigset_t blockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int waitForStopSignal(const sigset_t& stop_signals, const std::function<void()>& on_reload) {
  for (;;) {
    int sig = 0;
    if (sigwait(&stop_signals, &sig) != 0) continue;
    if (sig != SIGHUP) return sig;
    if (on_reload) on_reload();
  }
}

const char* stopSignalName(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

}  // namespace tandem::cli
