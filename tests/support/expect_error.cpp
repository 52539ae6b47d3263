#include "qkv/testing/expect_error.h"

namespace qkv::testing::detail {

::testing::AssertionResult message_has(const std::string& what,
                                       const std::vector<std::string>& fragments) {
  for (const std::string& f : fragments)
    if (what.find(f) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << f << "\"";
  return ::testing::AssertionSuccess();
}

}  // namespace qkv::testing::detail
