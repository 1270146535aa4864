/*
 * tests/programs/exec_from_thread.c - a second thread execs (echo) while a
 * third waits in pause(): the kernel ends the other threads, and the
 * execing thread goes on in the new image with the process's id, not its
 * own. det's capture took the thread's old id being gone for the thread
 * being gone, and freed its event ring while the exec ran: the new image
 * then wrote through no ring and crashed (strict mode under load, 3
 * recordings in 20).
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *waits(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *execs(void *arg)
{
	(void)arg;
	printf("before exec\n");
	fflush(stdout);
	execl("/bin/echo", "echo", "after exec, from a thread", (char *)NULL);
	perror("execl");
	return NULL;
}

int main(void)
{
	pthread_t w, e;
	pthread_create(&w, NULL, waits, NULL);
	pthread_create(&e, NULL, execs, NULL);
	pthread_join(e, NULL);
	return 1; /* (the exec failed) */
}
