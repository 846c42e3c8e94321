#include "common/outstanding.h"

namespace tandem {

Outstanding::Token& Outstanding::Token::operator=(Token&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = other.owner_;
    other.owner_ = nullptr;
  }
  return *this;
}

void Outstanding::Token::release() {
  if (owner_ == nullptr) return;
  Outstanding* owner = owner_;
  owner_ = nullptr;
  std::lock_guard lock(owner->mu_);
  if (--owner->out_ == 0) owner->none_.notify_all();
}

Outstanding::Token Outstanding::take() {
  std::lock_guard lock(mu_);
  ++out_;
  return Token(this);
}

void Outstanding::waitNone() {
  std::unique_lock lock(mu_);
  none_.wait(lock, [this] { return out_ == 0; });
}

int Outstanding::count() const {
  std::lock_guard lock(mu_);
  return out_;
}

}  // namespace tandem
