// How a cpu kernel that splits one op into tasks has them run: the backend
// hands its thread pool over as this.
#pragma once

#include <functional>

namespace tandem::kernels::cpu {

// runs fn(task) for every task in [0, count), possibly in parallel.
using ParallelTasks = std::function<void(int count, const std::function<void(int task)>& fn)>;

}  // namespace tandem::kernels::cpu
