#include "drivers/fake/fake_host.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <utility>

namespace aclvmm::dev::fake {
namespace {

class FakeSegment final : public StatisticsSegment {
 public:
  FakeSegment(std::shared_ptr<PublishedNames> names, void* data, size_t size, SegmentOwner owner,
              std::string path)
      : names_(std::move(names)), data_(data), size_(size), owner_(std::move(owner)),
        path_(std::move(path)) {}
  ~FakeSegment() override { std::free(data_); }  // never removes the name
  void* data() override { return data_; }
  size_t size() const override { return size_; }
  const SegmentOwner& owner() const override { return owner_; }
  const std::string& path() const override { return path_; }
  Result publish() override {
    std::lock_guard<std::mutex> lock(names_->mu);
    if (published_) return Result::from_errno(EPERM);  // as the POSIX writer: once
    if (!names_->paths.insert(path_).second) return Result::from_errno(EEXIST);
    published_ = true;
    return Result::success();
  }
  void withdraw() override {
    std::lock_guard<std::mutex> lock(names_->mu);
    if (published_) names_->paths.erase(path_);
    published_ = false;
  }

 private:
  const std::shared_ptr<PublishedNames> names_;
  void* const data_;
  const size_t size_;
  const SegmentOwner owner_;
  const std::string path_;
  bool published_ = false;  // under names_->mu
};

}  // namespace

FakeHost::FakeHost(FakeMachine& machine)
    : machine_(machine), names_(std::make_shared<PublishedNames>()) {}

FakeHost::~FakeHost() {
  for (void* table : tables_) std::free(table);
}

uint64_t FakeHost::memory_total() { return machine_.config().host_memory; }

uint64_t FakeHost::memory_free() {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return machine_.total(Location::host()) - machine_.used(Location::host());
}

Result FakeHost::create_statistics_segment(const std::string& dir, const std::string& prefix,
                                           size_t size, std::shared_ptr<StatisticsSegment>* out) {
  const FakeConfig& config = machine_.config();
  if (out == nullptr || size == 0) return Result::from_errno(EINVAL);
  const auto& dirs = config.segment_dirs;
  if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) return Result::from_errno(ENOENT);
  void* data = std::calloc(1, size);
  if (data == nullptr) return Result::from_errno(ENOMEM);
  try {
    SegmentOwner owner;
    owner.pid = config.pid;
    owner.uid = config.uid;
    owner.start_time = config.start_time;
    owner.name = "fake";
    owner.pid_namespace = 1;
    std::string path = dir + "/" + prefix + "." + std::to_string(config.uid) + "." +
                       std::to_string(config.pid);
    *out = std::make_shared<FakeSegment>(names_, data, size, std::move(owner), std::move(path));
  } catch (const std::bad_alloc&) {
    std::free(data);
    return Result::from_errno(ENOMEM);
  }
  return Result::success();
}

void* FakeHost::allocate_table(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  void* table = std::calloc(1, bytes);
  if (table == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(machine_.mutex());
  try {
    tables_.push_back(table);
  } catch (const std::bad_alloc&) {
    std::free(table);
    return nullptr;
  }
  return table;
}

bool FakeHost::published(const std::string& path) const {
  std::lock_guard<std::mutex> lock(names_->mu);
  return names_->paths.count(path) != 0;
}

}  // namespace aclvmm::dev::fake
