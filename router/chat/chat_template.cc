#include "router/chat/chat_template.h"
