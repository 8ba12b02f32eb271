// Deprecated Asio names (io_service, io_service::work, io_context::post),
// compiled without BOOST_ASIO_NO_DEPRECATED: that is the user's choice, and
// leasehold must neither define the macro for its users nor need it.
#include "legacy.hpp"

#include <boost/asio/io_service.hpp>

#if defined(BOOST_ASIO_NO_DEPRECATED)
#error "BOOST_ASIO_NO_DEPRECATED reached the guest service: leasehold must not impose Asio's macros"
#endif

namespace guest {

bool run_with_work(boost::asio::io_context& io, std::chrono::milliseconds bound,
                   const std::function<bool()>& done) {
  boost::asio::io_service& service = io;
  boost::asio::io_service::work work(service);
  bool posted = false;
  service.post([&] { posted = true; });
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    service.run_one_for(std::chrono::milliseconds(20));
  }
  return posted && done();
}

}  // namespace guest
