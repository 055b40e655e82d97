// The two result tables of the core: kernel errnos (behavior.md §0) and the driver library's
// results (hal.md §3.0), each row by row.
#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace aclvmm {
namespace {

struct DriverRow {
  uint32_t driver;  // drvError_t
  int acl;
};

// hal.md §3.0, in the table's order; the "anything else" row by its examples.
constexpr DriverRow kDriverRows[] = {
    {0, 0},           {1, 207004},  {2, 107001},  {3, 107000},  {58, 107000}, {83, 107000},
    {4, 107017},      {5, 107018},  {6, 207001},  {10, 207015}, {14, 207005}, {40, 207005},
    {16, 507012},     {25, 507901}, {27, 507051}, {33, 507010}, {37, 207012}, {43, 507000},
    {46, 207006},     {47, 207007}, {48, 207008}, {49, 207009}, {50, 207010}, {74, 507052},
    {75, 207013},     {76, 207014}, {82, 507037}, {84, 207011}, {89, 207020}, {0xfffe, 207000},
    {7, 507899},      {8, 507899},  {9, 507899},  {11, 507899}, {13, 507899}, {17, 507899},
    {38, 507899},     {42, 507899}, {51, 507899}, {79, 507899}, {12, 507899}, {23, 507899},
    {0xffff, 507899},
};

TEST(CodeFromDriver, EveryRowOfTheRuntimesTable) {
  for (const DriverRow& row : kDriverRows) {
    EXPECT_EQ(code_from_driver(row.driver), row.acl) << "drvError_t " << row.driver;
  }
}

TEST(CodeFromErrno, TheKernelErrnosAsTheDriverMapsThem) {
  const struct {
    int neg_errno;
    int acl;
  } rows[] = {
      {0, 0},
      {-EFAULT, 107017},
      {-ENOMEM, 207001},
      {-EPERM, 207006},
      {-EOPNOTSUPP, 207000},
      {-ENOSPC, 207005},
      {-ENODEV, 207004},
      {-ENXIO, 207004},
      {-E2BIG, 207012},
      {-EINVAL, 507899},
      {-EACCES, 507899},
      {-EBUSY, 507899},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(code_from_errno(row.neg_errno), row.acl) << "errno " << -row.neg_errno;
  }
}

}  // namespace
}  // namespace aclvmm
