#include "router/tokenizer/tokenizer.h"
