// node-maintenance-operator: the manager binary.
//
// Placeholder until the controller exists: it parses flags (--help, --version) and exits with
// status 2 otherwise. Threading: single-threaded.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#ifndef NMO_VERSION
#error "NMO_VERSION must be defined by the build (cmd/node-maintenance-operator/CMakeLists.txt)"
#endif

namespace {

// Exit status while the controller does not exist; CLI11 reports bad flags with its own codes.
constexpr int kExitNotImplemented = 2;
// Exit status for an unexpected exception escaping the flag parser.
constexpr int kExitInternalError = 1;

int run(int argc, char** argv) {
  CLI::App app{
      "Kubernetes Node Maintenance Operator: cordons and drains nodes requested by "
      "NodeMaintenance objects.",
      "node-maintenance-operator"};
  app.set_version_flag("--version", std::string("node-maintenance-operator ") + NMO_VERSION);
  CLI11_PARSE(app, argc, argv);

  std::fputs("node-maintenance-operator: the controller is not implemented yet\n", stderr);
  return kExitNotImplemented;
}

}  // namespace

int main(int argc, char** argv) {
  // CLI11 reports flag errors through exceptions that CLI11_PARSE handles; anything else
  // escaping is a bug, reported without unwinding past main.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "node-maintenance-operator: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("node-maintenance-operator: internal error: unknown exception\n", stderr);
  }
  return kExitInternalError;
}
