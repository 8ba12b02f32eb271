// The elector core alone, compiled with the patched command_window.hpp
// ahead on the include path (CMakeLists.txt): linked ahead of the library with
// --allow-multiple-definition, its ElectorCore is the one the mutant runs,
// and the rest of the library stays as built.
#include <leasehold/config.hpp>
#include <leasehold/impl/core/elector_core.ipp>
