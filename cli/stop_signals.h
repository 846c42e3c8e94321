// How the long-running subcommands (serve, router, worker) stop and reload:
// SIGINT, SIGTERM and SIGHUP are blocked in every thread (the mask is
// inherited by threads started later) and taken synchronously on the main
// thread. SIGHUP never stops a process: it re-reads what can be re-read
// (TLS certificates, API key files), or is ignored.
#pragma once

#include <signal.h>

#include <functional>

namespace tandem::cli {

// blocks SIGINT, SIGTERM and SIGHUP in the calling thread (call it before
// starting any thread) and returns the set to wait on.
sigset_t blockStopSignals();

// waits for SIGINT or SIGTERM and returns it; runs `on_reload` (when set)
// for every SIGHUP meanwhile.
int waitForStopSignal(const sigset_t& stop_signals, const std::function<void()>& on_reload = {});

// "SIGINT" or "SIGTERM", for the draining message.
const char* stopSignalName(int sig);

}  // namespace tandem::cli
