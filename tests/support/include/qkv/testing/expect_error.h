// Assertions on qkv's typed errors (qkv/base/error.h): a test checks the type a caller
// catches and the words a user reads, not just that something was thrown.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <typeinfo>
#include <vector>

namespace qkv::testing {

namespace detail {
// Success iff `what` contains every fragment; the failure quotes the message and the
// first missing fragment.
::testing::AssertionResult message_has(const std::string& what,
                                       const std::vector<std::string>& fragments);
}  // namespace detail

// Success iff fn throws E (or a subclass of E) whose message contains every fragment.
template <class E>
::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                       const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const E& e) {
    return detail::message_has(e.what(), fragments);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// As throws_with, but the type must be E itself, not a subclass: for the layers whose
// callers tell subclasses apart (io: a truncated file vs. any other read error).
template <class E>
::testing::AssertionResult throws_exactly(const std::function<void()>& fn,
                                          const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const E& e) {
    if (typeid(e) != typeid(E))
      return ::testing::AssertionFailure() << "a subclass of the expected type: " << e.what();
    return detail::message_has(e.what(), fragments);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

}  // namespace qkv::testing
