// Where the embedded default model (and other files shipped with tandem) are
// found when no path is given.
#pragma once

#include <string>

namespace tandem::cli {

// $TANDEM_MODEL when set; else models/stories260K/gguf/stories260K.gguf of
// the source tree the binary was built from (the binary sits in build/).
std::string defaultModelPath();

// a file shipped with tandem (e.g. "planner/profiles/mi300x-llama3-8b.json"):
// found in the nearest directory above the binary that holds it (an image's
// /opt/tandem, a build tree's source checkout), else under the source tree
// the binary was built from.
std::string shippedFilePath(const std::string& relative);

}  // namespace tandem::cli
