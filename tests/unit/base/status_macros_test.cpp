// The status macros of base/status.h: ACLVMM_RETURN_IF_ERROR and ACLVMM_ASSIGN_OR_RETURN return a
// failure unchanged (code and message) and run nothing after it, evaluate their expression once,
// and on success go on with the value (moved, so move-only values work), into a new or an
// existing variable, from functions returning Status or a StatusOr of another type.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "base/status.h"

namespace aclvmm {
namespace {

constexpr int kCode = 107000;

// Counts evaluations of the macro's expression and whether the code after the macro ran.
struct Probe {
  int evaluated = 0;
  bool went_on = false;
};

Status step(Probe* p, bool fail) {
  ++p->evaluated;
  return fail ? Error(kCode, "step failed") : Status::Ok();
}

StatusOr<int> number(Probe* p, bool fail) {
  ++p->evaluated;
  if (fail) return Error(kCode, "no number");
  return 42;
}

StatusOr<std::unique_ptr<std::string>> owned(Probe* p, bool fail) {
  ++p->evaluated;
  if (fail) return Error(kCode, "nothing owned");
  return std::make_unique<std::string>("bytes");
}

Status return_if_error(Probe* p, bool fail) {
  ACLVMM_RETURN_IF_ERROR(step(p, fail));
  p->went_on = true;
  return Status::Ok();
}

// Into a new variable, from a function returning a StatusOr of another type.
StatusOr<std::string> assign_declared(Probe* p, bool fail) {
  ACLVMM_ASSIGN_OR_RETURN(const int n, number(p, fail));
  p->went_on = true;
  return std::to_string(n);
}

// Into an existing variable, from a function returning Status.
Status assign_existing(Probe* p, bool fail, int* out) {
  int n = -1;
  ACLVMM_ASSIGN_OR_RETURN(n, number(p, fail));
  p->went_on = true;
  *out = n;
  return Status::Ok();
}

// A move-only value, and two uses in one function (each gets its own temporary).
StatusOr<size_t> assign_move_only(Probe* p, bool fail_second) {
  ACLVMM_ASSIGN_OR_RETURN(std::unique_ptr<std::string> a, owned(p, false));
  ACLVMM_ASSIGN_OR_RETURN(std::unique_ptr<std::string> b, owned(p, fail_second));
  p->went_on = true;
  return a->size() + b->size();
}

void expect_failure(const Status& st, const std::string& message) {
  EXPECT_EQ(st.code(), kCode);
  EXPECT_EQ(st.message(), message);
}

TEST(StatusMacros, ReturnIfErrorReturnsTheFailureUnchanged) {
  Probe p;
  expect_failure(return_if_error(&p, true), "step failed");
  EXPECT_EQ(p.evaluated, 1);
  EXPECT_FALSE(p.went_on);
}

TEST(StatusMacros, ReturnIfErrorGoesOnAfterSuccess) {
  Probe p;
  EXPECT_TRUE(return_if_error(&p, false).ok());
  EXPECT_EQ(p.evaluated, 1);
  EXPECT_TRUE(p.went_on);
}

TEST(StatusMacros, AssignOrReturnReturnsTheFailureUnchanged) {
  Probe declared, existing, move_only;
  StatusOr<std::string> a = assign_declared(&declared, true);
  ASSERT_FALSE(a.ok());
  expect_failure(a.status(), "no number");
  int out = 7;
  expect_failure(assign_existing(&existing, true, &out), "no number");
  EXPECT_EQ(out, 7);
  StatusOr<size_t> m = assign_move_only(&move_only, true);
  ASSERT_FALSE(m.ok());
  expect_failure(m.status(), "nothing owned");
  for (const Probe* p : {&declared, &existing}) {
    EXPECT_EQ(p->evaluated, 1);
    EXPECT_FALSE(p->went_on);
  }
  EXPECT_EQ(move_only.evaluated, 2);
  EXPECT_FALSE(move_only.went_on);
}

TEST(StatusMacros, AssignOrReturnGoesOnWithTheValue) {
  Probe declared, existing, move_only;
  StatusOr<std::string> a = assign_declared(&declared, false);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, "42");
  int out = 7;
  EXPECT_TRUE(assign_existing(&existing, false, &out).ok());
  EXPECT_EQ(out, 42);
  StatusOr<size_t> m = assign_move_only(&move_only, false);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, 10u);
  for (const Probe* p : {&declared, &existing}) {
    EXPECT_EQ(p->evaluated, 1);
    EXPECT_TRUE(p->went_on);
  }
  EXPECT_EQ(move_only.evaluated, 2);
  EXPECT_TRUE(move_only.went_on);
}

}  // namespace
}  // namespace aclvmm
