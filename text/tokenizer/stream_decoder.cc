#include "text/tokenizer/text_util.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

std::string StreamDecoder::push(TokenId id) {
  if (skip_special_ && tok_.isSpecial(id)) return "";
  // the first token goes through decode() so it drops the leading space
  // the way decode() of the whole sequence does.
  std::string bytes = first_ ? tok_.decode({id}, skip_special_) : tok_.tokenBytes(id);
  if (bytes.empty()) return "";
  first_ = false;
  pending_ += bytes;
  size_t complete = completeUtf8Prefix(pending_);
  std::string out = sanitizeUtf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = sanitizeUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace tandem::tokenizer
