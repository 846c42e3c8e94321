// Where tests find their data, so no test hard-codes a path.
#pragma once

#include <string>

namespace tandem::testing {

// the repository root.
std::string sourceDir();
// tests/data in the repository (small vendored files).
std::string testDataDir();
// the vendored default model: models/stories260K/{gguf/stories260K.gguf,hf}
std::string storiesGguf();
std::string storiesHfDir();
// the large tokenizers fetched at build time: <dir>/{llama3,qwen3}
std::string fetchedDataDir();
// the build tree (the tandem binary is <build>/tandem).
std::string binaryDir();
std::string tandemBinary();
// a fresh empty directory under the system temp dir, unique per call. The
// process that made it removes it, with all it holds, when it exits normally
// (a test that forgets, or fails before its TearDown, leaves nothing behind;
// a forked child that exits does not remove its parent's directories).
std::string makeTempDir();

}  // namespace tandem::testing
