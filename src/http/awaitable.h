// The completion token of every coroutine on Asio in this project: `co_await op(..., use_tuple)`
// returns the error code (and result) as a tuple instead of throwing.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>

namespace ib {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

/// A co_spawn completion handler that rethrows what the coroutine threw (tests).
inline void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

}  // namespace ib
