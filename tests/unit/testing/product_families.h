// One SoC name of each product family, in the order the support tables list the families
// (950, A3, A2, EDGE, INF, TRAIN).
#pragma once

namespace aclvmm::testing {

inline const char* const kFamilySoc[] = {"Ascend950PR_9599", "Ascend910_9391", "Ascend910B1",
                                         "Ascend310B1",      "Ascend310P3",    "Ascend910A"};

}  // namespace aclvmm::testing
