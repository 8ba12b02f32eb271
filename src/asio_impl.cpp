// Asio's separately compiled definitions (BOOST_ASIO_SEPARATE_COMPILATION).
#include <boost/asio/impl/src.hpp>
#if LEASEHOLD_HAS_TLS
#include <boost/asio/ssl/impl/src.hpp>
#endif
