/*
 * tests/programs/proc_edges.c - process behaviours a user's program hits
 * at the edges of fork, exec and wait (issue 23 item 5):
 *   kill       fork children, kill them (SIGKILL; SIGTERM) while they sleep,
 *              and while one is busy making events; waitpid each
 *   fifo       parent and child open one FIFO from both ends (each open
 *              blocks until the other end opens) and pass lines through it
 *   fifobulk   the child reads a FIFO's 100000 bytes (what one write of the
 *              parent's put in) and closes it before the parent does
 *   badexec    execve with bad pointers: must fail with EFAULT, not crash
 *   dropexec   (run as root) setgid/setuid to nobody, then exec PROGRAM ARGS
 *   stdout     several processes write lines to one stdout at once
 *   daemon     fork, setsid, fork; the parent and the first child exit,
 *              the grandchild (its output to /dev/null) works a little
 *              after they are gone (300 ms, or PROGRAM ms), and exits
 * Usage: proc_edges MODE [PROGRAM [ARG...]]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void report(const char *what, int st)
{
	if (WIFSIGNALED(st))
		printf("%s: killed by %d\n", what, WTERMSIG(st));
	else
		printf("%s: exited %d\n", what, WEXITSTATUS(st));
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void do_kill(void)
{
	static const int sigs[] = { SIGKILL, SIGTERM };
	for (int i = 0; i < 2; i++) {
		pid_t p = fork();
		if (p == 0) {
			sleep(30);
			_exit(0);
		}
		usleep(20000);
		kill(p, sigs[i]);
		int st;
		pid_t got = waitpid(p, &st, 0);
		printf("waited %d: ", got == p);
		report(i ? "sleeper TERM" : "sleeper KILL", st);
	}
	/* a child busy making events (locks) when it is killed */
	pid_t p = fork();
	if (p == 0) {
		for (;;) {
			pthread_mutex_lock(&lock);
			counter++;
			pthread_mutex_unlock(&lock);
			usleep(100); /* (a few hundred events, not a million) */
		}
	}
	usleep(20000);
	kill(p, SIGKILL);
	int st;
	waitpid(p, &st, 0);
	report("busy KILL", st);
}

/* A new FIFO at /tmp/proc_edges.PID.SUFFIX */
static void make_fifo(char *path, size_t size, const char *suffix)
{
	snprintf(path, size, "/tmp/proc_edges.%d.%s", (int)getpid(), suffix);
	unlink(path);
	if (mkfifo(path, 0600) != 0) {
		perror("mkfifo");
		exit(1);
	}
}

static void do_fifo(void)
{
	char path[64];
	make_fifo(path, sizeof path, "fifo");
	pid_t p = fork();
	if (p == 0) {
		int fd = open(path, O_WRONLY);
		for (int i = 0; i < 3; i++)
			dprintf(fd, "line %d\n", i);
		close(fd);
		/* and the other way round: the child reads this time */
		fd = open(path, O_RDONLY);
		char buf[64];
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		_exit(n == 6 && memcmp(buf, "reply\n", 6) == 0 ? 5 : 1);
	}
	int fd = open(path, O_RDONLY);
	char buf[256];
	size_t got = 0;
	ssize_t n;
	while ((n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	close(fd);
	fd = open(path, O_WRONLY);
	(void)!write(fd, "reply\n", 6);
	close(fd);
	int st;
	waitpid(p, &st, 0);
	unlink(path);
	printf("parent read %zu bytes: %s", got, buf);
	report("child", st);
}

#define BULK 100000

static void do_fifo_bulk(void)
{
	char path[64];
	make_fifo(path, sizeof path, "bulk");
	pid_t p = fork();
	if (p == 0) {
		int fd = open(path, O_RDONLY);
		static char in[BULK];
		size_t got = 0;
		ssize_t n;
		while (got < BULK && (n = read(fd, in + got, BULK - got)) > 0)
			got += (size_t)n;
		close(fd);
		_exit(got == BULK ? 7 : 1);
	}
	int fd = open(path, O_WRONLY);
	static char out[BULK];
	memset(out, 'x', sizeof out);
	/* more than the pipe holds: it returns once the child has read most of it */
	ssize_t n = write(fd, out, sizeof out);
	int st;
	waitpid(p, &st, 0);
	close(fd);
	unlink(path);
	printf("parent wrote %zd bytes\n", n);
	report("child", st);
}

static void do_badexec(void)
{
	char *ok_argv[] = { "/bin/true", NULL };
	/* volatile: the compiler must not see that these point nowhere */
	char **volatile bad = (char **)1;
	const char *volatile bad_path = (const char *)1;
	errno = 0;
	int r = execve("/bin/true", bad, NULL);
	printf("bad argv: %d %s\n", r, strerror(errno));
	errno = 0;
	r = execve("/bin/true", ok_argv, bad);
	printf("bad envp: %d %s\n", r, strerror(errno));
	errno = 0;
	r = execve(bad_path, ok_argv, NULL);
	printf("bad path: %d %s\n", r, strerror(errno));
	char *bad_elem[] = { "/bin/true", (char *)1, NULL };
	errno = 0;
	r = execve("/bin/true", bad_elem, NULL);
	printf("bad argv element: %d %s\n", r, strerror(errno));
	errno = 0;
	r = execvp("no-such-program-here", bad);
	printf("execvp bad argv: %d %s\n", r, strerror(errno));
}

static void do_dropexec(char **args)
{
	if (setgid(65534) != 0 || setuid(65534) != 0) {
		perror("dropping root");
		exit(1);
	}
	printf("dropped to %d:%d\n", (int)getuid(), (int)getgid());
	fflush(stdout);
	execv(args[0], args);
	perror("execv");
	exit(1);
}

static void do_stdout(void)
{
	pid_t kids[3];
	for (int k = 0; k < 3; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			for (int i = 0; i < 20; i++) {
				printf("child %d line %d\n", k, i);
				fflush(stdout);
				/* plain write(2) too, not only stdio */
				char line[32];
				int n = snprintf(line, sizeof line, "child %d raw %d\n", k, i);
				(void)!write(1, line, (size_t)n);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < 20; i++) {
		printf("parent line %d\n", i);
		fflush(stdout);
	}
	for (int k = 0; k < 3; k++)
		waitpid(kids[k], NULL, 0);
	printf("all done\n");
}

static void do_daemon(long ms)
{
	pid_t p = fork();
	if (p == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		/* the daemon, as daemon(3) makes one: out of the way of its
		 * starter's directory and terminal; it works a little after
		 * everyone else has gone */
		if (chdir("/") != 0)
			_exit(1);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
		usleep((useconds_t)ms * 1000);
		for (int i = 0; i < 100; i++) {
			pthread_mutex_lock(&lock);
			counter++;
			pthread_mutex_unlock(&lock);
		}
		printf("daemon counted %ld\n", counter);
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	report("first child", st);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "kill") == 0)
		do_kill();
	else if (strcmp(mode, "fifo") == 0)
		do_fifo();
	else if (strcmp(mode, "fifobulk") == 0)
		do_fifo_bulk();
	else if (strcmp(mode, "badexec") == 0)
		do_badexec();
	else if (strcmp(mode, "dropexec") == 0 && argc > 2)
		do_dropexec(argv + 2);
	else if (strcmp(mode, "stdout") == 0)
		do_stdout();
	else if (strcmp(mode, "daemon") == 0)
		do_daemon(argc > 2 ? atol(argv[2]) : 300);
	else {
		fprintf(stderr, "usage: proc_edges kill|fifo|fifobulk|badexec|dropexec PROGRAM [ARG...]|stdout|daemon\n");
		return 2;
	}
	return 0;
}
