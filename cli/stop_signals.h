// How the long-running subcommands (serve, router, worker) stop: SIGINT and
// SIGTERM are blocked in every thread (the mask is inherited by threads
// started later) and taken synchronously on the main thread.
#pragma once

#include <signal.h>

namespace tandem::cli {

// blocks SIGINT and SIGTERM in the calling thread (call it before starting
// any thread) and returns the set to wait on.
sigset_t blockStopSignals();

// waits for one of `stop_signals` and returns it.
int waitForStopSignal(const sigset_t& stop_signals);

// "SIGINT" or "SIGTERM", for the draining message.
const char* stopSignalName(int sig);

}  // namespace tandem::cli
