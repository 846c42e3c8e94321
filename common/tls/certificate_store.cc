#include "common/tls/certificate_store.h"

#include <utility>

namespace tandem::tls {

absl::StatusOr<CertificateStorePtr> CertificateStore::create(const TlsFiles& files) {
  absl::StatusOr<TlsMaterial> material = loadTlsMaterial(files);
  if (!material.ok()) return material.status();
  return CertificateStorePtr(new CertificateStore(files, *std::move(material)));
}

CertificateStore::CertificateStore(TlsFiles files, TlsMaterial material)
    : files_(std::move(files)),
      material_(std::make_shared<const TlsMaterial>(std::move(material))) {}

absl::Status CertificateStore::reload() {
  absl::StatusOr<TlsMaterial> material = loadTlsMaterial(files_);
  if (!material.ok()) return material.status();
  {
    std::lock_guard lock(mu_);
    material_ = std::make_shared<const TlsMaterial>(*std::move(material));
    // bumped under the lock: whoever sees the new generation finds the new material.
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  return absl::OkStatus();
}

std::shared_ptr<const TlsMaterial> CertificateStore::current(uint64_t* generation) const {
  std::lock_guard lock(mu_);
  if (generation != nullptr) *generation = generation_.load(std::memory_order_acquire);
  return material_;
}

}  // namespace tandem::tls
