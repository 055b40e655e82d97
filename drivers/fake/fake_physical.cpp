#include "drivers/fake/fake_physical.h"

#include <cerrno>
#include <new>

namespace aclvmm::dev::fake {

FakePhysical::Object* FakePhysical::find(PhysicalId memory, const char* what) const {
  auto it = objects_.find(memory.value);
  if (it == objects_.end() || it->second->released) {
    (void)machine_.violation(what);
    return nullptr;
  }
  return it->second.get();
}

// Under the machine's lock.
Result FakePhysical::check(const PhysicalSpec& spec, uint64_t granule) const {
  const FakeConfig& config = machine_.config();
  switch (spec.location.kind) {
    case Location::Kind::kDevice:
      if (!machine_.valid_device(spec.location.id)) {
        return machine_.violation("create: no such device");
      }
      break;
    case Location::Kind::kHost:
      if (spec.location.id != 0) return machine_.violation("create: host memory takes id 0");
      break;
    case Location::Kind::kHostNuma:
      if (config.numa_nodes == 0) return Result::from_errno(EOPNOTSUPP);  // capabilities say so
      if (spec.location.id < 0 || spec.location.id >= config.numa_nodes) {
        return machine_.violation("create: no such NUMA node");
      }
      break;
    default:
      return machine_.violation("create: not a location of memory");
  }
  if (spec.page_type > PageType::kGiant || spec.mem_type > MemType::kP2pDdr) {
    return machine_.violation("create: no such page or memory type");
  }
  if (spec.page_type == PageType::kGiant && !config.giant_pages) {
    return Result::from_errno(EOPNOTSUPP);
  }
  if (spec.size == 0 || spec.size % granule != 0) {
    return machine_.violation("create: the size is not a whole number of granules");
  }
  return Result::success();
}

Result FakePhysical::create(const PhysicalSpec& spec, PhysicalId* out) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr) return machine_.violation("create: no result pointer");
  return create_locked(spec, page_granule(spec.page_type), out);
}

Result FakePhysical::create_locked(const PhysicalSpec& spec, uint64_t granule, PhysicalId* out) {
  if (Result r = check(spec, granule); !r.ok()) return r;
  if (Result r = machine_.charge(spec.location, spec.size); !r.ok()) return r;
  PhysicalProperties props;
  props.location = spec.location;
  props.page_type = spec.page_type;
  props.mem_type = spec.mem_type;
  props.size = spec.size;
  try {
    objects_.emplace(next_id_, std::make_unique<Object>(props, std::make_shared<ByteStore>(props.size), true));
  } catch (const std::bad_alloc&) {
    machine_.uncharge(spec.location, spec.size);
    return Result::from_errno(ENOMEM);
  }
  *out = PhysicalId{next_id_++};
  return Result::success();
}

Result FakePhysical::release(PhysicalId memory) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return release_locked(memory);
}

Result FakePhysical::release_locked(PhysicalId memory) {
  Object* object = find(memory, "release: not a live physical id");
  if (object == nullptr) return Result::from_errno(EINVAL);
  if (ends_export_ != nullptr) ends_export_(ends_export_context_, memory);
  object->released = true;
  if (object->mappings == 0) let_go_locked(memory);
  return Result::success();
}

const PhysicalProperties* FakePhysical::live_locked(PhysicalId memory, const char* what) const {
  const Object* object = find(memory, what);
  return object == nullptr ? nullptr : &object->properties;
}

void FakePhysical::hold_locked(PhysicalId memory) { ++objects_.at(memory.value)->mappings; }

void FakePhysical::let_go_locked(PhysicalId memory) {
  auto it = objects_.find(memory.value);
  if (it == objects_.end()) return;
  Object& object = *it->second;
  if (object.mappings > 0 && --object.mappings > 0) return;
  if (!object.released) return;
  if (object.charged) machine_.uncharge(object.properties.location, object.properties.size);
  objects_.erase(it);
}

ByteStore* FakePhysical::bytes_locked(PhysicalId memory) {
  auto it = objects_.find(memory.value);
  return it == objects_.end() ? nullptr : it->second->bytes.get();
}

std::shared_ptr<ByteStore> FakePhysical::shared_bytes_locked(PhysicalId memory) {
  const Object* object = find(memory, "share: not a live physical id");
  return object == nullptr ? nullptr : object->bytes;
}

Result FakePhysical::adopt_locked(const PhysicalProperties& properties,
                                  std::shared_ptr<ByteStore> bytes, PhysicalId* out) {
  try {
    objects_.emplace(next_id_, std::make_unique<Object>(properties, std::move(bytes), false));
  } catch (const std::bad_alloc&) {
    return Result::from_errno(ENOMEM);
  }
  *out = PhysicalId{next_id_++};
  return Result::success();
}

Result FakePhysical::properties(PhysicalId memory, PhysicalProperties* out) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  const Object* object = find(memory, "properties: not a live physical id");
  if (object == nullptr) return Result::from_errno(EINVAL);
  if (out == nullptr) return machine_.violation("properties: no result pointer");
  *out = object->properties;
  return Result::success();
}

Result FakePhysical::granularity(const PhysicalSpec& spec, Granularity option,
                                 uint64_t* out) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  if (out == nullptr || option > Granularity::kRecommended || spec.page_type > PageType::kGiant) {
    return machine_.violation("granularity: no such option or page type");
  }
  if (spec.page_type == PageType::kGiant && !machine_.config().giant_pages) {
    return Result::from_errno(EOPNOTSUPP);
  }
  *out = page_granule(spec.page_type);
  return Result::success();
}

Result FakePhysical::set_map_route(PhysicalId memory, uint32_t route) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  Object* object = find(memory, "set_map_route: not a live physical id");
  if (object == nullptr) return Result::from_errno(EINVAL);
  if (route >= kMapRouteCount) return Result::from_errno(ENOENT);
  object->route = route;
  return Result::success();
}

Result FakePhysical::map_route(PhysicalId memory, uint32_t* route) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  const Object* object = find(memory, "map_route: not a live physical id");
  if (object == nullptr) return Result::from_errno(EINVAL);
  if (route == nullptr) return machine_.violation("map_route: no result pointer");
  *route = object->route;
  return Result::success();
}

Result FakePhysical::read(PhysicalId memory, uint64_t offset, void* dst, size_t n) const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  const Object* object = find(memory, "read: not a live physical id");
  if (object == nullptr) return Result::from_errno(EINVAL);
  return object->bytes->read(offset, dst, n);
}

Result FakePhysical::write(PhysicalId memory, uint64_t offset, const void* src, size_t n) {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  Object* object = find(memory, "write: not a live physical id");
  if (object == nullptr) return Result::from_errno(EINVAL);
  return object->bytes->write(offset, src, n);
}

size_t FakePhysical::live_objects() const {
  std::lock_guard<std::mutex> lock(machine_.mutex());
  return objects_.size();
}

}  // namespace aclvmm::dev::fake
