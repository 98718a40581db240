// Where the end-to-end tests find upstream medik8s NMO's fixture (its manager.xz and config/,
// outside the repository; test/README.md): $NMO_UPSTREAM_NMO_DIR, else the directory the build
// compiled in (the CMake cache variable NMO_UPSTREAM_NMO_DIR, by default shared/upstream-nmo
// beside the checkout). Tests that need it skip when it is absent.
#pragma once

#include <cstdlib>
#include <filesystem>

#ifndef NMO_UPSTREAM_NMO_DIR
#error "NMO_UPSTREAM_NMO_DIR must be defined by the build (test/CMakeLists.txt)"
#endif

namespace nmo::e2e {

inline std::filesystem::path upstream_fixture() {
  if (const char* dir = std::getenv("NMO_UPSTREAM_NMO_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  return NMO_UPSTREAM_NMO_DIR;
}

}  // namespace nmo::e2e
