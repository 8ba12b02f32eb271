// The guest service's own Asio, compiled once in this TU as Asio's
// documentation describes: the target defines BOOST_ASIO_SEPARATE_COMPILATION
// (src.hpp refuses to compile without it). leasehold must link beside it
// without a second definition of anything in boost::asio.
#include <boost/asio/impl/src.hpp>
