// Objects an owner handed out that are still alive somewhere else (an async
// gRPC call ends, then is destroyed on a gRPC thread), and a wait for none:
// the owner's stop() returns only once nothing it handed out can touch it.
// Each such object holds a Token as its first member, so the token is
// destroyed last, after the contexts and stubs the object holds.
#pragma once

#include <condition_variable>
#include <mutex>

namespace tandem {

class Outstanding {
 public:
  // counts one object out until destroyed (or moved from into another).
  class Token {
   public:
    Token() = default;
    Token(Token&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Token& operator=(Token&& other) noexcept;
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    ~Token() { release(); }

   private:
    friend class Outstanding;
    explicit Token(Outstanding* owner) : owner_(owner) {}
    void release();
    Outstanding* owner_ = nullptr;
  };

  Outstanding() = default;
  Outstanding(const Outstanding&) = delete;
  Outstanding& operator=(const Outstanding&) = delete;

  // one more out; it may be called under the caller's own lock (this one's
  // lock is taken last, never held while calling out).
  Token take();
  // blocks until every token is destroyed.
  void waitNone();
  int count() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable none_;
  int out_ = 0;  // guarded by mu_
};

}  // namespace tandem
