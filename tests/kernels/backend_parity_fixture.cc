#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {

void BackendHarness::start(const BackendUnderTest& entry) {
  entry_ = &entry;
  auto created = entry.create();
  ASSERT_TRUE(created.ok()) << created.status();
  backend_ = std::move(*created);
  attach(backend_.get(), [this] { return entry_->finish(*backend_); });
}

void BackendHarness::stop() {
  releaseDevice();
  backend_.reset();
}

}  // namespace tandem::kernels
