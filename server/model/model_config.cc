#include "server/model/model_config.h"
