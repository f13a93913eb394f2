#pragma once
#include <c10/metal/common.h>

struct OrderParams {
  c10::metal::vec3<uint> shape;
  float scale;
};
