// node-maintenance-operator: the manager binary. Parses the flags of SPEC §6 (each also settable
// through the environment as NMO_<FLAG>), finds the API server like controller-runtime, and runs
// the NodeMaintenance controller, behind leader election when asked to. SIGTERM and SIGINT stop
// it cleanly: the reconcile workers finish, queued Events are written and the leader Lease is
// released.
//
// Exit status: 0 after a clean stop, 1 when leadership was lost or the controller could not
// start, 2 for a bad flag or configuration (the message names it).
//
// Threading: one io_context thread runs everything (see docs/architecture.md).
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/signal_set.hpp>

#include "base/log.h"
#include "http/asio.h"
#include "kube/client/client.h"
#include "kube/config/load_rest_config.h"
#include "operator/controller/operator.h"
#include "runtime/leader_election.h"

#ifndef NMO_VERSION
#error "NMO_VERSION must be defined by the build (cmd/node-maintenance-operator/CMakeLists.txt)"
#endif

namespace nmo {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// The leader-election id upstream uses, so two operators never lead in one namespace (SPEC §3.2).
constexpr const char* kLeaderElectionId = "135b1886.medik8s.io";

struct Flags {
  std::string kubeconfig;
  std::string context;
  bool leader_elect = false;
  int max_parallel = 1;
  std::string etcd_quorum_check = "auto";
  int etcd_quorum_stable_for_seconds = 30;
  double qps = 20.0;
  int burst = 30;
  std::string log_format = "text";
  int verbosity = 0;
  op::OperatorOptions options;
};

std::string host_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0) return name.data();
  return "node-maintenance-operator";
}

// Runs the controller until a signal or lost leadership; returns the exit status.
asio::awaitable<int> serve(kube::Client& client, const Flags& flags, const log::Logger& logger) {
  auto executor = co_await asio::this_coro::executor;
  op::Operator controller(executor, client, flags.options);
  asio::signal_set signals(executor, SIGINT, SIGTERM);
  int status = 0;
  bool stopping = false;

  if (!flags.leader_elect) {
    auto started = co_await controller.start();
    if (!started) {
      logger.error("the controller could not start", {{"error", started.error().describe()}});
      co_await controller.stop();
      co_return kExitFailure;
    }
    auto [ec, signal] = co_await signals.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!ec) logger.info("stopping", {{"signal", signal}});
    co_await controller.stop();
    co_return 0;
  }

  // The elector's callbacks only record the news and wake this loop, which starts and stops the
  // controller in order.
  bool leading = false;
  bool elector_ended = false;
  asio::steady_timer wake(executor, asio::steady_timer::time_point::max());
  runtime::LeaderElector elector(
      executor, client,
      runtime::LeaderElectionConfig{.lease_namespace = flags.options.namespace_,
                                    .lease_name = kLeaderElectionId,
                                    .identity = flags.options.identity,
                                    .on_started_leading =
                                        [&] {
                                          leading = true;
                                          wake.cancel();
                                        },
                                    .on_stopped_leading =
                                        [&] {
                                          leading = false;
                                          wake.cancel();
                                        },
                                    .on_new_leader =
                                        [&](const std::string& holder) {
                                          logger.info("leader observed", {{"leader", holder}});
                                        }});
  asio::co_spawn(
      executor,
      [&]() -> asio::awaitable<void> {
        co_await elector.run();
        elector_ended = true;
        wake.cancel();
      },
      asio::detached);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    logger.info("stopping", {{"signal", signal}});
    stopping = true;
    elector.stop();
    wake.cancel();
  });
  bool controller_running = false;
  for (;;) {
    co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
    wake.expires_at(asio::steady_timer::time_point::max());
    if (leading && !controller_running && !stopping) {
      logger.info("became the leader; starting the controller");
      auto started = co_await controller.start();
      if (!started) {
        logger.error("the controller could not start", {{"error", started.error().describe()}});
        status = kExitFailure;
        elector.stop();
      } else {
        controller_running = true;
      }
    }
    if ((!leading || stopping) && controller_running) {
      co_await controller.stop();
      controller_running = false;
      if (!stopping) {
        logger.error("lost leadership; exiting so that a fresh process campaigns again");
        status = kExitFailure;
        elector.stop();
      }
    }
    if (elector_ended) break;
  }
  if (controller_running) co_await controller.stop();
  co_return status;
}

int run(int argc, char** argv) {
  CLI::App app{
      "Kubernetes Node Maintenance Operator: cordons and drains nodes requested by "
      "NodeMaintenance objects.",
      "node-maintenance-operator"};
  app.set_version_flag("--version", std::string("node-maintenance-operator ") + NMO_VERSION);
  Flags flags;
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster, then ~/.kube/config)")
      ->envname("NMO_KUBECONFIG");
  app.add_option("--context", flags.context, "kubeconfig context (default: current-context)")
      ->envname("NMO_CONTEXT");
  app.add_option("--namespace", flags.options.namespace_,
                 "the operator's namespace: budget slot Leases and the leader Lease")
      ->envname("NMO_NAMESPACE")
      ->capture_default_str();
  app.add_flag("--leader-elect", flags.leader_elect,
               "elect a leader among replicas; only the leader reconciles")
      ->envname("NMO_LEADER_ELECT");
  app.add_option("--max-parallel-maintenances", flags.max_parallel,
                 "how many nodes may be under maintenance at once")
      ->envname("NMO_MAX_PARALLEL_MAINTENANCES")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--lease-namespace", flags.options.lease_namespace,
                 "namespace of the medik8s node leases shared with NHC/SNR")
      ->envname("LEASE_NAMESPACE")
      ->capture_default_str();
  app.add_option("--etcd-quorum-check", flags.etcd_quorum_check,
                 "keep control-plane nodes Pending while etcd quorum would be lost: auto|off")
      ->envname("NMO_ETCD_QUORUM_CHECK")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--etcd-quorum-stable-for", flags.etcd_quorum_stable_for_seconds,
                 "seconds etcd quorum must have stayed safe before a control-plane node is taken")
      ->envname("NMO_ETCD_QUORUM_STABLE_FOR")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app.add_option("--kube-api-qps", flags.qps, "client-side rate limit towards the API server")
      ->envname("NMO_KUBE_API_QPS")
      ->check(CLI::Range(0.1, 100000.0))
      ->capture_default_str();
  app.add_option("--kube-api-burst", flags.burst, "client-side burst towards the API server")
      ->envname("NMO_KUBE_API_BURST")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--log-format", flags.log_format, "json or text")
      ->envname("NMO_LOG_FORMAT")
      ->check(CLI::IsMember({"json", "text"}))
      ->capture_default_str();
  app.add_option("-v,--log-level", flags.verbosity, "debug verbosity (0 = decisions only)")
      ->envname("NMO_LOG_LEVEL")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  log::configure(flags.log_format == "json" ? log::Format::kJson : log::Format::kText,
                 flags.verbosity);
  const log::Logger logger = log::root().with({{"controller", "manager"}});
  flags.options.max_parallel_maintenances = flags.max_parallel;
  flags.options.etcd_quorum_check = flags.etcd_quorum_check == "auto";
  flags.options.etcd_quorum_stable_for = std::chrono::seconds(flags.etcd_quorum_stable_for_seconds);
  flags.options.identity = host_identity();

  auto rest = kube::load_rest_config({.path = flags.kubeconfig, .context = flags.context});
  if (!rest) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n", rest.error().describe().c_str());
    return kExitUsage;
  }
  asio::io_context io;
  kube::ClientOptions client_options;
  client_options.qps = flags.qps;
  client_options.burst = flags.burst;
  auto client = kube::Client::create(io.get_executor(), *rest, client_options);
  if (!client) {
    std::fprintf(stderr, "node-maintenance-operator: %s\n", client.error().describe().c_str());
    return kExitUsage;
  }
  logger.info("starting", {{"version", NMO_VERSION},
                           {"api_server", rest->server},
                           {"config", rest->origin},
                           {"namespace", flags.options.namespace_},
                           {"max_parallel_maintenances", flags.max_parallel},
                           {"leader_elect", flags.leader_elect}});
  int status = 0;
  asio::co_spawn(io, serve(**client, flags, logger), [&](std::exception_ptr error, int result) {
    status = error ? kExitFailure : result;
    (*client)->shutdown();
  });
  io.run();
  logger.info("stopped", {{"exit_status", status}});
  return status;
}

}  // namespace
}  // namespace nmo

int main(int argc, char** argv) {
  // CLI11 reports flag errors through exceptions that CLI11_PARSE handles; anything else
  // escaping is a bug, reported without unwinding past main.
  try {
    return nmo::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "node-maintenance-operator: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("node-maintenance-operator: internal error: unknown exception\n", stderr);
  }
  return 1;
}
