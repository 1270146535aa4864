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
 * With "whole", the title is written over everything up to the end of the
 * environment block the kernel gave the process (/proc/self/stat's env_end),
 * strings no longer in environ included, and the worker outlives the reader
 * of its output (SIGPIPE ignored), as a daemon that logs elsewhere.
 *
 * Usage: title_daemon [whole]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The end of the environment block (field 51 of /proc/self/stat), or NULL. */
static char *env_end(void)
{
	char buf[2048];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 51; field++)
		p = strchr(p + 1, ' ');
	return p ? (char *)strtoull(p + 1, NULL, 10) : NULL;
}

int main(int argc, char **argv)
{
	char *whole = argc > 1 && strcmp(argv[1], "whole") == 0 ? env_end() : NULL;
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid > 0)
		return 0; /* (prints nothing: its line and the worker's are in no order det keeps) */
	set_title(argv, "title_daemon: worker process");
	if (whole)
		signal(SIGPIPE, SIG_IGN);
	if (whole)
		memset(argv[0] + strlen(argv[0]) + 1, 0, (size_t)(whole - argv[0] - (long)strlen(argv[0]) - 1));
	for (int i = 0;; i++) {
		printf("worker: %d\n", i);
		fflush(stdout);
		usleep(20000);
	}
}
