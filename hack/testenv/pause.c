/* The pod sandbox's process on the local cluster's real node (hack/real-node.sh builds it into
 * the image containerd uses as its sandbox image, so no pause image is pulled). It holds the
 * pod's namespaces open: it sleeps until SIGTERM or SIGINT and reaps any child it inherits as
 * the pod's PID 1. Linked statically, so the image holds this one file. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGTERM, &on_stop, NULL) != 0 || sigaction(SIGINT, &on_stop, NULL) != 0 ||
      sigaction(SIGCHLD, &on_child, NULL) != 0) {
    return EXIT_FAILURE;
  }
  for (;;) pause();
}
