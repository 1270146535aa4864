/*
 * tests/programs/proc_tour.c - every way det follows a child process:
 *   fork      a child with threads racing on a lock, waited for by pid;
 *             children's pids, statuses and getpid/getppid printed
 *   wait      two children collected by wait() in whatever order they end
 *   system    system() with an exit status
 *   popen     popen() both ways (read a command's output, write to one)
 *   spawn     posix_spawnp of sh, and posix_spawn of a binary by path
 *   exec      the process replaces itself (execvp), keeping its threads'
 *             numbering going in the new image
 *   static    execs a statically linked program (det must refuse it)
 *   all       fork, wait, system, popen, spawn in turn (the default)
 * Usage: proc_tour [MODE] [STATIC_PROGRAM]
 */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static char order[64];
static int norder;

static void *bump(void *arg)
{
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		if (i % 50 == 0 && norder < 60)
			order[norder++] = (char)('a' + (long)arg);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void race(void)
{
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, bump, (void *)i);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

static void do_fork(void)
{
	pid_t me = getpid();
	pid_t p = fork();
	if (p == 0) {
		race();
		printf("child: counter %ld order %s parent ok %d\n", counter, order, getppid() == me);
		fflush(stdout);
		_exit(3);
	}
	race(); /* the parent's threads race at the same time */
	int st;
	pid_t got = waitpid(p, &st, 0);
	printf("parent: counter %ld order %s; child %d exited %d (waited %d)\n", counter, order, p > 0,
	       WEXITSTATUS(st), got == p);
}

static void do_wait(void)
{
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			race();
			_exit(10 + i);
		}
	}
	for (int i = 0; i < 2; i++) {
		int st;
		pid_t got = wait(&st);
		printf("wait: child %d exited %d\n", got == kids[0] ? 0 : got == kids[1] ? 1 : -1, WEXITSTATUS(st));
	}
}

static void do_system(void)
{
	int st = system("echo from system; exit 4");
	printf("system: exited %d\n", WEXITSTATUS(st));
}

static void do_popen(void)
{
	FILE *f = popen("seq 1 100", "r");
	long sum = 0, v;
	while (fscanf(f, "%ld", &v) == 1)
		sum += v;
	printf("popen r: sum %ld status %d\n", sum, pclose(f));
	f = popen("tr a-z A-Z", "w");
	fputs("written through popen\n", f);
	fflush(stdout);
	printf("popen w: status %d\n", pclose(f));
}

static void do_spawn(void)
{
	pid_t p;
	char *sh[] = {"sh", "-c", "echo spawned $0", "sh", NULL};
	int r = posix_spawnp(&p, "sh", NULL, NULL, sh, environ);
	int st;
	waitpid(p, &st, 0);
	printf("spawnp: %d exited %d\n", r, WEXITSTATUS(st));
	char *t[] = {"true", NULL};
	r = posix_spawn(&p, "/bin/true", NULL, NULL, t, environ);
	waitpid(p, &st, 0);
	printf("spawn: %d exited %d\n", r, WEXITSTATUS(st));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	setvbuf(stdout, NULL, _IOLBF, 0);
	int all = !strcmp(mode, "all");
	if (all || !strcmp(mode, "fork"))
		do_fork();
	if (all || !strcmp(mode, "wait"))
		do_wait();
	if (all || !strcmp(mode, "system"))
		do_system();
	if (all || !strcmp(mode, "popen"))
		do_popen();
	if (all || !strcmp(mode, "spawn"))
		do_spawn();
	if (!strcmp(mode, "exec")) {
		race();
		printf("before exec: counter %ld\n", counter);
		char *sh[] = {"sh", "-c", "echo after exec in $0", "shell", NULL};
		execvp("sh", sh);
		perror("execvp");
		return 1;
	}
	if (!strcmp(mode, "static") && argc > 2) {
		execl(argv[2], argv[2], (char *)NULL);
		perror("execl");
		return 1;
	}
	return 0;
}
