#include "router/openai/openai_response.h"
