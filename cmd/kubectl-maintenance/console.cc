#include "console.h"

#include <cstdio>

namespace nmo::cli {

int report(const Failure& failure) {
  std::fprintf(stderr, "error: %s\n", failure.message.c_str());
  return failure.exit_code;
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace nmo::cli
