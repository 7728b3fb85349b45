// GPU tests are compiled everywhere and skip, with the reason, when no sm_90a device is present.
#pragma once

#include <gtest/gtest.h>

#include "fp4kit/device.h"

#define FP4KIT_REQUIRE_SM90A()                                                               \
  do {                                                                                        \
    const auto& fp4kit_dev_ = ::fp4kit::device_info();                                        \
    if (!fp4kit_dev_.available) GTEST_SKIP() << "no CUDA GPU (" << fp4kit_dev_.reason << ")"; \
    if (fp4kit_dev_.compute_capability != 90)                                                 \
      GTEST_SKIP() << "needs an sm_90 GPU, found sm_" << fp4kit_dev_.compute_capability;      \
  } while (0)
