#include "qkv/autograd/registry.h"

#include <mutex>
#include <set>

#include "detail/record.h"

namespace qkv::autograd {
namespace {

struct Registry {
  std::mutex mutex;
  std::set<std::string> names;
};

// Function-local static: registrations run during static initialisation of other files,
// in an order we do not control.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

OpRegistration::OpRegistration(std::string_view name) : name_(name) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.names.emplace(name);
}

std::vector<std::string> registered_ops() {
  detail::link_linear_functions();
  detail::link_nn_functions();
  detail::link_recurrent_functions();
  detail::link_sequence_functions();
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return {r.names.begin(), r.names.end()};
}

}  // namespace qkv::autograd
