/*
 * tests/programs/gdb_env.c - prints what it was started with: every
 * argument, every environment variable in order, the working directory,
 * and where its stack starts, then does one event in a thread. A replay
 * under gdb must print exactly what the recording printed, det's own
 * variables included (det keeps the one whose value differs out of sight).
 *
 * Usage: gdb_env [ARGS...]
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

extern char **environ;

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=<%s>\n", i, argv[i]);
	for (char **e = environ; *e; e++)
		printf("env <%s>\n", *e);
	char cwd[4096];
	printf("cwd <%s>\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
	printf("stack %p\n", (void *)&argc);
	pthread_t t;
	pthread_create(&t, NULL, nothing, NULL);
	pthread_join(t, NULL);
	return 0;
}
