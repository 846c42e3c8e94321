#include "cli/stop_signals.h"

#include <pthread.h>

namespace tandem::cli {

sigset_t blockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int waitForStopSignal(const sigset_t& stop_signals) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  return sig;
}

const char* stopSignalName(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

}  // namespace tandem::cli
