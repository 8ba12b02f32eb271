// The compiled library: the same single translation unit a header-mostly user
// writes (include/leasehold/src.hpp).
#include <leasehold/src.hpp>
