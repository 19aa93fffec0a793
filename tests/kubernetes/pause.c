/* The test cluster's pause program: the process that holds a pod's
 * namespaces (the CRI's sandbox container). It sleeps until SIGTERM or
 * SIGINT and, as the pod's PID 1 when the pod shares one PID namespace,
 * reaps the children that end up with it. Built static
 * (`gcc -static -O2`) so its image needs no libraries. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static void reap(int sig) {
	int saved = errno;
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

int main(int argc, char **argv) {
	struct sigaction stop = {0}, child = {0};
	sigset_t stops, waiting;
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		puts("iofleet pause");
		return 0;
	}
	stop.sa_handler = on_stop;
	child.sa_handler = reap;
	child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	if (sigaction(SIGTERM, &stop, NULL) || sigaction(SIGINT, &stop, NULL) || sigaction(SIGCHLD, &child, NULL)) {
		perror("pause: sigaction");
		return 1;
	}
	/* SIGTERM/SIGINT blocked but while waiting: none is lost between the
	 * check and the wait. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigprocmask(SIG_BLOCK, &stops, &waiting);
	sigdelset(&waiting, SIGTERM);
	sigdelset(&waiting, SIGINT);
	while (!stop_signal)
		sigsuspend(&waiting);
	return 0;
}
