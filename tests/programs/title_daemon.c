/*
 * title_daemon - a child that sets its process title and outlives its
 * parent, as nginx's workers, postgres's backends and sendmail do: the
 * title is written over the memory that held argv and the environment
 * strings (what `ps` and /proc/PID/cmdline and /proc/PID/environ show), so
 * nothing of the environment the process was started with can be read
 * from outside any more. The parent exits at once; the child prints a line
 * every 20 ms until it is stopped (detrec --outlive stops it, and replay
 * once it has done its recorded events).
 *
 * Usage: title_daemon
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* What setproctitle implementations do: the strings of argv and environ
 * are one block; write the title over all of it. */
static void set_title(char **argv, const char *title)
{
	char *start = argv[0], *end = argv[0] + strlen(argv[0]) + 1;
	for (char **e = environ; *e; e++)
		if (*e == end)
			end = *e + strlen(*e) + 1;
	memset(start, 0, (size_t)(end - start));
	strncpy(start, title, (size_t)(end - start) - 1);
}

int main(int argc, char **argv)
{
	(void)argc;
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid > 0)
		return 0; /* (prints nothing: its line and the worker's are in no order det keeps) */
	set_title(argv, "title_daemon: worker process");
	for (int i = 0;; i++) {
		printf("worker: %d\n", i);
		fflush(stdout);
		usleep(20000);
	}
}
