// hpctrain-data inspect ROOT (tools/data/inspect.cpp).
#pragma once

#include <string>

namespace hpctrain {

// Prints ROOT's splits, shards, class histogram and value checks; 0, or 2 when a check failed.
int inspect(const std::string& root);

}  // namespace hpctrain
