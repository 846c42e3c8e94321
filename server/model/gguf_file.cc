#include "server/model/gguf_file.h"
