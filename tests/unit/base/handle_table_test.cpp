// Unit tests of HandleTable: opaque generation-checked tokens; stale, double-freed and forged
// tokens must fail without touching any object.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/handle_table.h"

namespace aclvmm {
namespace {

struct Obj {
  explicit Obj(int v) : value(v) {}
  int value;
};

// The token layout documented in handle_table.h: tag in bits 48..63, generation in bits 24..47,
// slot index + 1 in bits 0..23.
constexpr uint64_t kLowMask = (1ull << 24) - 1;
constexpr uint64_t kGenShift = 24;
uint64_t low(uint64_t t) { return t & kLowMask; }
uint64_t gen(uint64_t t) { return (t >> kGenShift) & kLowMask; }
uint64_t tag(uint64_t t) { return t >> 48; }

TEST(HandleTable, InsertFindRemove) {
  HandleTable<Obj> table(0x51);
  auto a = std::make_shared<Obj>(1);
  auto b = std::make_shared<Obj>(2);
  uint64_t ta = table.insert(a);
  uint64_t tb = table.insert(b);
  EXPECT_NE(ta, 0u);
  EXPECT_NE(tb, 0u);
  EXPECT_NE(ta, tb);
  EXPECT_EQ(tag(ta), 0x51u);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.find(ta), a);
  EXPECT_EQ(table.find(tb), b);
  EXPECT_EQ(table.find(ta)->value, 1);

  std::shared_ptr<Obj> removed = table.remove(ta);
  EXPECT_EQ(removed, a);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.find(ta), nullptr);
  EXPECT_EQ(table.find(tb), b);  // the other entry is untouched
}

TEST(HandleTable, RemoveDropsTheTablesReference) {
  HandleTable<Obj> table(1);
  auto a = std::make_shared<Obj>(7);
  uint64_t t = table.insert(a);
  EXPECT_EQ(a.use_count(), 2);
  { auto r = table.remove(t); }
  EXPECT_EQ(a.use_count(), 1);
}

TEST(HandleTable, StaleTokenAfterRemoveFails) {
  HandleTable<Obj> table(3);
  uint64_t t = table.insert(std::make_shared<Obj>(1));
  ASSERT_NE(table.remove(t), nullptr);
  EXPECT_EQ(table.find(t), nullptr);
  EXPECT_EQ(table.find_locked(t), nullptr);
  EXPECT_EQ(table.size(), 0u);
}

TEST(HandleTable, DoubleRemoveFails) {
  HandleTable<Obj> table(3);
  uint64_t t = table.insert(std::make_shared<Obj>(1));
  uint64_t other = table.insert(std::make_shared<Obj>(2));
  ASSERT_NE(table.remove(t), nullptr);
  EXPECT_EQ(table.remove(t), nullptr);
  EXPECT_EQ(table.remove(t), nullptr);
  EXPECT_EQ(table.size(), 1u);
  // The double remove did not put the slot on the free list twice: two inserts get two
  // distinct live slots.
  uint64_t n1 = table.insert(std::make_shared<Obj>(3));
  uint64_t n2 = table.insert(std::make_shared<Obj>(4));
  EXPECT_NE(low(n1), low(n2));
  EXPECT_EQ(table.find(n1)->value, 3);
  EXPECT_EQ(table.find(n2)->value, 4);
  EXPECT_EQ(table.find(other)->value, 2);
  EXPECT_EQ(table.size(), 3u);
}

struct ForgedCase {
  const char* name;
  uint64_t (*make)(uint64_t live);  // derives the forged value from a live token
};

class HandleTableForged : public ::testing::TestWithParam<ForgedCase> {};

TEST_P(HandleTableForged, Rejected) {
  const ForgedCase& c = GetParam();
  HandleTable<Obj> table(0x2A);
  HandleTable<Obj> other(0x2B);
  std::vector<uint64_t> live;
  for (int i = 0; i < 3; ++i) live.push_back(table.insert(std::make_shared<Obj>(i)));
  other.insert(std::make_shared<Obj>(100));
  const uint64_t forged = c.make(live[1]);
  for (uint64_t t : live) ASSERT_NE(forged, t) << c.name;
  EXPECT_EQ(table.find(forged), nullptr) << c.name;
  EXPECT_EQ(table.remove(forged), nullptr) << c.name;
  {
    std::lock_guard lock(table.mutex());
    EXPECT_EQ(table.find_locked(forged), nullptr) << c.name;
    EXPECT_EQ(table.remove_locked(forged), nullptr) << c.name;
  }
  // Nothing was removed by the attempts.
  EXPECT_EQ(table.size(), 3u) << c.name;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(table.find(live[i])->value, i) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Table, HandleTableForged,
    ::testing::Values(
        ForgedCase{"zero", [](uint64_t) -> uint64_t { return 0; }},
        ForgedCase{"all_ones", [](uint64_t) -> uint64_t { return ~0ull; }},
        ForgedCase{"random", [](uint64_t) -> uint64_t { return 0xdeadbeefcafebabeull; }},
        ForgedCase{"small_integer", [](uint64_t) -> uint64_t { return 2; }},
        ForgedCase{"other_tag", [](uint64_t t) -> uint64_t { return (t & ~(0xFFFFull << 48)) | (0x2Bull << 48); }},
        ForgedCase{"no_tag", [](uint64_t t) -> uint64_t { return t & ((1ull << 48) - 1); }},
        ForgedCase{"index_zero", [](uint64_t t) -> uint64_t { return t & ~kLowMask; }},
        ForgedCase{"index_out_of_range", [](uint64_t t) -> uint64_t { return (t & ~kLowMask) | 4; }},
        ForgedCase{"index_max", [](uint64_t t) -> uint64_t { return t | kLowMask; }},
        ForgedCase{"generation_plus_one", [](uint64_t t) -> uint64_t { return t + (1ull << kGenShift); }},
        ForgedCase{"generation_zero", [](uint64_t t) -> uint64_t { return t & ~(kLowMask << kGenShift); }},
        ForgedCase{"pointer_like", [](uint64_t) -> uint64_t { return 0x00007f1234567000ull; }}),
    [](const ::testing::TestParamInfo<ForgedCase>& info) { return std::string(info.param.name); });

TEST(HandleTable, TokenOfAnotherTableIsRejectedEvenWithSameSlot) {
  HandleTable<Obj> streams(0x10);
  HandleTable<Obj> handles(0x11);
  uint64_t ts = streams.insert(std::make_shared<Obj>(1));
  uint64_t th = handles.insert(std::make_shared<Obj>(2));
  ASSERT_EQ(low(ts), low(th));  // both slot 0, generation 1: only the tag differs
  ASSERT_EQ(gen(ts), gen(th));
  EXPECT_EQ(handles.find(ts), nullptr);
  EXPECT_EQ(streams.find(th), nullptr);
  EXPECT_EQ(handles.remove(ts), nullptr);
  EXPECT_EQ(handles.size(), 1u);
}

TEST(HandleTable, SlotReuseGivesADifferentToken) {
  HandleTable<Obj> table(5);
  auto a = std::make_shared<Obj>(1);
  uint64_t ta = table.insert(a);
  ASSERT_NE(table.remove(ta), nullptr);
  auto b = std::make_shared<Obj>(2);
  uint64_t tb = table.insert(b);
  EXPECT_EQ(low(tb), low(ta));  // the slot was reused...
  EXPECT_NE(tb, ta);            // ...under a new generation
  EXPECT_EQ(table.find(ta), nullptr);
  EXPECT_EQ(table.remove(ta), nullptr);  // the stale token cannot remove the new occupant
  EXPECT_EQ(table.find(tb), b);
  EXPECT_EQ(table.size(), 1u);
}

TEST(HandleTable, RepeatedReuseOfOneSlotNeverRepeatsAToken) {
  HandleTable<Obj> table(6);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint64_t t = table.insert(std::make_shared<Obj>(i));
    EXPECT_TRUE(seen.insert(t).second) << "token repeated at iteration " << i;
    ASSERT_NE(table.remove(t), nullptr);
  }
  for (uint64_t t : seen) EXPECT_EQ(table.find(t), nullptr);
  EXPECT_EQ(table.size(), 0u);
}

TEST(HandleTable, SnapshotAndSizeCountLiveEntries) {
  HandleTable<Obj> table(7);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.snapshot().empty());
  std::vector<uint64_t> tokens;
  for (int i = 0; i < 6; ++i) tokens.push_back(table.insert(std::make_shared<Obj>(i)));
  ASSERT_NE(table.remove(tokens[1]), nullptr);
  ASSERT_NE(table.remove(tokens[4]), nullptr);
  EXPECT_EQ(table.size(), 4u);
  auto snap = table.snapshot();
  ASSERT_EQ(snap.size(), 4u);
  std::set<int> values;
  for (const auto& [token, obj] : snap) {
    ASSERT_NE(obj, nullptr);
    EXPECT_EQ(table.find(token), obj);  // every snapshot token is live and names its object
    EXPECT_EQ(token, tokens[obj->value]);
    values.insert(obj->value);
  }
  EXPECT_EQ(values, (std::set<int>{0, 2, 3, 5}));
}

TEST(HandleTable, LockedVariantsUnderTheTableMutex) {
  HandleTable<Obj> table(8);
  uint64_t t = table.insert(std::make_shared<Obj>(42));
  {
    std::lock_guard lock(table.mutex());
    auto found = table.find_locked(t);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->value, 42);
    EXPECT_NE(table.remove_locked(t), nullptr);
    EXPECT_EQ(table.remove_locked(t), nullptr);
  }
  EXPECT_EQ(table.find(t), nullptr);
  EXPECT_EQ(table.size(), 0u);
}

// Four threads insert and remove concurrently; every token each thread gets stays valid until
// that thread removes it and no two live entries share a token.
TEST(HandleTableConcurrency, FourThreadsInsertFindRemove) {
  HandleTable<Obj> table(0x33);
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::atomic<int> failures{0};
  std::atomic<int> removed{0};
  std::vector<std::vector<uint64_t>> kept(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint64_t> mine;
      for (int i = 0; i < kRounds; ++i) {
        const int value = t * kRounds + i;
        uint64_t tok = table.insert(std::make_shared<Obj>(value));
        auto f = table.find(tok);
        if (!f || f->value != value) ++failures;
        mine.push_back(tok);
        if (i % 2 == 1) {  // remove every other entry, the older one first
          uint64_t victim = mine[mine.size() - 2];
          auto r = table.remove(victim);
          if (!r || r->value != value - 1) ++failures;
          if (table.remove(victim) != nullptr) ++failures;  // double remove
          if (table.find(victim) != nullptr) ++failures;    // stale
          ++removed;
          mine.erase(mine.end() - 2);
        }
      }
      kept[t] = std::move(mine);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(removed.load(), kThreads * kRounds / 2);
  EXPECT_EQ(table.size(), static_cast<size_t>(kThreads * kRounds / 2));
  std::set<uint64_t> unique;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t tok : kept[t]) {
      EXPECT_TRUE(unique.insert(tok).second);
      auto f = table.find(tok);
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->value / kRounds, t);
    }
  }
  EXPECT_EQ(table.snapshot().size(), unique.size());

  // Tear down concurrently too.
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t tok : kept[t]) {
        if (!table.remove(tok)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.snapshot().empty());
}

// Threads race to remove the same tokens: each token is removed exactly once.
TEST(HandleTableConcurrency, RacingRemovesSucceedExactlyOnce) {
  HandleTable<Obj> table(0x34);
  constexpr int kEntries = 4000;
  std::vector<uint64_t> tokens;
  for (int i = 0; i < kEntries; ++i) tokens.push_back(table.insert(std::make_shared<Obj>(i)));
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (uint64_t tok : tokens) {
        if (table.remove(tok)) ++wins;
        table.insert(std::make_shared<Obj>(-1));  // reuse slots while others still hold tokens
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wins.load(), kEntries);
  EXPECT_EQ(table.size(), static_cast<size_t>(4 * kEntries));
  for (uint64_t tok : tokens) EXPECT_EQ(table.find(tok), nullptr);
}

}  // namespace
}  // namespace aclvmm
