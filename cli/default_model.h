// Where the embedded default model is found when --model is not given.
#pragma once

#include <string>

namespace tandem::cli {

// $TANDEM_MODEL when set; else models/stories260K/gguf/stories260K.gguf of
// the source tree the binary was built from (the binary sits in build/).
std::string defaultModelPath();

}  // namespace tandem::cli
