// The TLS certificate a server presents, re-readable while it serves: the
// HTTP server and the gRPC credentials (common/grpc/reloadable_server_
// credentials.h) take every new handshake's certificate from here, so a
// reload() (on SIGHUP) changes what new connections see while the listener
// and the connections already open carry on.
//
//   ASSIGN_OR_RETURN(CertificateStorePtr store, CertificateStore::create(files));
//   http_options.tls = store;  ...  on SIGHUP: if (!store->reload().ok()) log it
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "common/tls/tls_files.h"

namespace tandem::tls {

class CertificateStore;
using CertificateStorePtr = std::shared_ptr<CertificateStore>;

class CertificateStore {
 public:
  // reads and checks `files` (loadTlsMaterial's errors).
  static absl::StatusOr<CertificateStorePtr> create(const TlsFiles& files);

  // reads the files again. On success new handshakes use what they hold
  // now and generation() grows; on error (loadTlsMaterial's) nothing
  // changes: the server keeps presenting the certificate it had.
  absl::Status reload();

  // the material in use (never null); with its generation in *generation
  // when given (read together: they always match).
  std::shared_ptr<const TlsMaterial> current(uint64_t* generation = nullptr) const;
  // grows by one with every successful reload(); 1 after create().
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  const TlsFiles& files() const { return files_; }

 private:
  CertificateStore(TlsFiles files, TlsMaterial material);

  const TlsFiles files_;
  mutable std::mutex mu_;
  std::shared_ptr<const TlsMaterial> material_;  // guarded by mu_
  std::atomic<uint64_t> generation_{1};
};

}  // namespace tandem::tls
