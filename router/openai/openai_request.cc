#include "router/openai/openai_request.h"
