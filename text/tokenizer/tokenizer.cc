#include "text/tokenizer/tokenizer.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "formats/gguf_file.h"
#include "text/tokenizer/gguf_tokenizer_loader.h"
#include "text/tokenizer/hf_tokenizer_loader.h"

namespace tandem::tokenizer {

absl::StatusOr<TokenizerPtr> Tokenizer::load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return fromHfDir(path);
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  }
  if (absl::EndsWith(path, "tokenizer.json")) {
    return fromHfDir(std::filesystem::path(path).parent_path().string());
  }
  ASSIGN_OR_RETURN(model::GgufFilePtr gguf, model::GgufFile::open(path));
  return fromGguf(*gguf);
}

absl::StatusOr<TokenizerPtr> Tokenizer::fromHfDir(const std::string& dir) {
  return loadHfTokenizer(dir);
}

absl::StatusOr<TokenizerPtr> Tokenizer::fromGguf(const model::GgufFile& gguf) {
  return loadGgufTokenizer(gguf);
}

}  // namespace tandem::tokenizer
